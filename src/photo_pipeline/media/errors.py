"""The one error the media layer raises on purpose, with a stable ``code``, and how a
decoder's own exceptions say that memory ran out (:func:`out_of_memory`)."""

from __future__ import annotations

import errno

from photo_pipeline.errors import PhotoPipelineError

EMPTY_FILE = "empty_file"
UNSUPPORTED_FORMAT = "unsupported_format"
CORRUPT_FILE = "corrupt_file"
UNREADABLE_FILE = "unreadable_file"
TOO_MANY_PIXELS = "too_many_pixels"
FILE_VANISHED = "file_vanished"
DECODE_TIMEOUT = "decode_timeout"
OUT_OF_MEMORY = "out_of_memory"

CODES = frozenset(
    {
        EMPTY_FILE,
        UNSUPPORTED_FORMAT,
        CORRUPT_FILE,
        UNREADABLE_FILE,
        TOO_MANY_PIXELS,
        FILE_VANISHED,
        DECODE_TIMEOUT,
        OUT_OF_MEMORY,
    }
)
# Failures of the moment, not of the file: reading it again later may well succeed.
TRANSIENT_CODES = frozenset({OUT_OF_MEMORY})


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
# - out_of_memory: the decoder ran short of memory (or of address space for its threads):
#   the machine's state at that moment (other decodes, a ulimit), not the file's; the
#   file is to be read again later, never taken for corrupt.


class MediaError(PhotoPipelineError):
    """A file cannot be read as a photo or video; ``code`` is one of :data:`CODES`."""

    code = "media_error"
    status = 422


# How the decoders say it, as they say it under a real RLIMIT_AS or a failed malloc:
# libvips "vips_tracked: out of memory -- size == 34MB" (vips_malloc and vips_tracked),
# its libjpeg "VipsJpeg: Insufficient memory (case 4)", glib "Error creating thread"
# (a thread stack finds no address space left), libheif "Memory allocation error",
# libpng and FFmpeg "out of memory", strerror(ENOMEM) "Cannot allocate memory".
_OUT_OF_MEMORY_SIGNS = (
    "out of memory",
    "insufficient memory",
    "memory allocation",
    "cannot allocate memory",
    "failed to allocate",
    "error creating thread",
)


def out_of_memory(exc: BaseException) -> bool:
    """Whether a decoder's ``exc`` says that memory ran out rather than that the file
    is bad: ``MemoryError`` (Python's, Pillow's buffers, PyAV's ``av.error.MemoryError``),
    ``ENOMEM``, or a library's message (libvips, libjpeg, glib, libheif). LibRaw says it
    with its own class (``LibRawUnsufficientMemoryError``), which its callers check."""
    if isinstance(exc, MemoryError):
        return True
    if isinstance(exc, OSError) and exc.errno == errno.ENOMEM:
        return True
    return says_out_of_memory(str(exc))


def says_out_of_memory(message: str) -> bool:
    """Whether a decoder's error message says that memory ran out."""
    message = message.lower()
    if "security limit" in message:
        # libheif reports a file that asks for more than its limits allow as a
        # "Memory allocation error: Security limit exceeded": the file's doing
        return False
    return any(sign in message for sign in _OUT_OF_MEMORY_SIGNS)
