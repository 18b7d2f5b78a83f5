"""Pure functions on photo and video files: identify, read metadata, hash, render.
No jobs, no database.

* ``read_metadata(path)`` -> :class:`MediaMetadata` for every supported photo and video
  (``kind`` tells them apart); ``media.formats`` recognises formats by content.
* ``media.render.render_file(path, settings)``: thumbnail, preview and pHash, of a video
  from its poster frame (``media.poster``).
* ``find_embedded_video(path)``: the clip inside a Google/Samsung Motion Photo.
* Every failure is a :class:`MediaError` with a stable ``code`` (``media.errors``).
"""

import importlib
from typing import TYPE_CHECKING, Any

# Loaded on first use (PEP 562): importing the package must not load the decoders
# (Pillow, libvips, LibRaw, FFmpeg): commands that only read the library start fast.
_HOMES = {
    "CaptureTime": "capture_time",
    "capture_time_from_filename": "capture_time",
    "MediaError": "errors",
    "SUPPORTED_EXTENSIONS": "formats",
    "hash_file": "hashing",
    "hash_file_digests": "hashing",
    "DEFAULT_MAX_PIXELS": "limits",
    "MediaMetadata": "metadata",
    "PhotoMetadata": "metadata",
    "read_metadata": "metadata",
    "EmbeddedVideo": "motion_photo",
    "find_embedded_video": "motion_photo",
}

if TYPE_CHECKING:
    from photo_pipeline.media.capture_time import CaptureTime, capture_time_from_filename
    from photo_pipeline.media.errors import MediaError
    from photo_pipeline.media.formats import SUPPORTED_EXTENSIONS
    from photo_pipeline.media.hashing import hash_file, hash_file_digests
    from photo_pipeline.media.limits import DEFAULT_MAX_PIXELS
    from photo_pipeline.media.metadata import (
        MediaMetadata,
        PhotoMetadata,
        read_metadata,
    )
    from photo_pipeline.media.motion_photo import EmbeddedVideo, find_embedded_video


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_HOMES[name]}"), name)


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
    "hash_file_digests",
    "read_metadata",
]
