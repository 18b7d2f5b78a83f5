"""photo-pipeline: a self-hosted, durable photo-processing pipeline."""

__version__ = "0.1.0"
