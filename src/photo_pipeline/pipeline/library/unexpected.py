"""A file that makes a reader raise what it never should (a parser's bug on an odd
file: an overflow, a ``ValueError`` from a tag nobody wrote that way) fails its own
item with ``unexpected_error``, and the traceback goes to the worker's log; the job
goes on with the other files instead of failing, and failing again on every retry.
Memory running out on the way is no bug, and not the file's: ``out_of_memory``."""

from __future__ import annotations

import logging

from photo_pipeline.db.text import storable
from photo_pipeline.media.errors import OUT_OF_MEMORY

UNEXPECTED_ERROR = "unexpected_error"

log = logging.getLogger("photo_pipeline.unexpected")


def unexpected_failure(exc: Exception, path: str) -> tuple[str, str]:
    """The item error of ``exc``, raised while reading ``path`` (logged here); an OS
    error a reader let through is the file's: ``unreadable_file``; a ``MemoryError``
    the moment's: ``out_of_memory``."""
    if isinstance(exc, MemoryError):
        return OUT_OF_MEMORY, f"{path}: out of memory while reading it"
    if isinstance(exc, OSError):
        return "unreadable_file", f"{path}: {exc.strerror or exc}"
    log.error("%s: reading it raised %s", storable(path), type(exc).__name__, exc_info=exc)
    return (
        UNEXPECTED_ERROR,
        f"{path}: reading it raised {type(exc).__name__}: {exc} (a bug in photo-pipeline's "
        "readers: please report it, with the file if you can)",
    )
