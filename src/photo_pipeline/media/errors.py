"""The one error the media layer raises on purpose, with a stable ``code``."""

from __future__ import annotations

from photo_pipeline.errors import PhotoPipelineError

EMPTY_FILE = "empty_file"
UNSUPPORTED_FORMAT = "unsupported_format"
CORRUPT_FILE = "corrupt_file"
UNREADABLE_FILE = "unreadable_file"
TOO_MANY_PIXELS = "too_many_pixels"
FILE_VANISHED = "file_vanished"
DECODE_TIMEOUT = "decode_timeout"

CODES = frozenset(
    {
        EMPTY_FILE,
        UNSUPPORTED_FORMAT,
        CORRUPT_FILE,
        UNREADABLE_FILE,
        TOO_MANY_PIXELS,
        FILE_VANISHED,
        DECODE_TIMEOUT,
    }
)


# What the codes mean:
# - empty_file: zero bytes.
# - unsupported_format: the content (magic bytes, never the name) is no supported format; a
#   text file named .jpg is this, since without a signature nothing says it was ever a JPEG.
# - corrupt_file: the content claims a supported format but its header or data is damaged.
# - unreadable_file: permission denied, not a regular file (directory, FIFO, device), a
#   symlink loop, or an I/O error.
# - too_many_pixels: the header declares more pixels than allowed; nothing was decoded.
# - file_vanished: no file at the path (deleted, or a dangling symlink).
# - decode_timeout: reading or decoding a video took longer than its time limit (a
#   decoder or demuxer that hangs); the work was abandoned (the child process killed).


class MediaError(PhotoPipelineError):
    """A file cannot be read as a photo or video; ``code`` is one of :data:`CODES`."""

    code = "media_error"
    status = 422
