"""Pure functions on photo files: identify, read metadata, hash. No jobs, no database."""

from photo_pipeline.media.capture_time import CaptureTime, capture_time_from_filename
from photo_pipeline.media.errors import MediaError
from photo_pipeline.media.formats import SUPPORTED_EXTENSIONS
from photo_pipeline.media.hashing import hash_file
from photo_pipeline.media.metadata import DEFAULT_MAX_PIXELS, PhotoMetadata, read_metadata

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "SUPPORTED_EXTENSIONS",
    "CaptureTime",
    "MediaError",
    "PhotoMetadata",
    "capture_time_from_filename",
    "hash_file",
    "read_metadata",
]
