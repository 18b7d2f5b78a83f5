"""The HTTP API (FastAPI): jobs, live event streams, the library. A thin front door
over the pipeline and the coordinator."""

from photo_pipeline.api.app import create_app

__all__ = ["create_app"]
