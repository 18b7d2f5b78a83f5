"""Pure functions on photo and video files: identify, read metadata, hash, render.
No jobs, no database.

* ``read_metadata(path)`` -> :class:`MediaMetadata` for every supported photo and video
  (``kind`` tells them apart); ``media.formats`` recognises formats by content.
* ``media.render.render_file(path, settings)``: thumbnail, preview and pHash, of a video
  from its poster frame (``media.poster``).
* ``find_embedded_video(path)``: the clip inside a Google/Samsung Motion Photo.
* Every failure is a :class:`MediaError` with a stable ``code`` (``media.errors``).
"""

from photo_pipeline.media.capture_time import CaptureTime, capture_time_from_filename
from photo_pipeline.media.errors import MediaError
from photo_pipeline.media.formats import SUPPORTED_EXTENSIONS
from photo_pipeline.media.hashing import hash_file
from photo_pipeline.media.metadata import (
    DEFAULT_MAX_PIXELS,
    MediaMetadata,
    PhotoMetadata,
    read_metadata,
)
from photo_pipeline.media.motion_photo import EmbeddedVideo, find_embedded_video

__all__ = [
    "DEFAULT_MAX_PIXELS",
    "SUPPORTED_EXTENSIONS",
    "CaptureTime",
    "EmbeddedVideo",
    "MediaError",
    "MediaMetadata",
    "PhotoMetadata",
    "capture_time_from_filename",
    "find_embedded_video",
    "hash_file",
    "read_metadata",
]
