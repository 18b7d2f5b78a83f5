"""Open originals read-only and turn OS errors into :class:`MediaError`."""

from __future__ import annotations

import errno
import io
import os
import stat
from pathlib import Path

from photo_pipeline.media.errors import FILE_VANISHED, UNREADABLE_FILE, MediaError


def media_error_from_os(exc: OSError, path: Path | str) -> MediaError:
    """Map an OS-level failure on ``path`` to a MediaError with a stable code."""
    if isinstance(exc, FileNotFoundError) or exc.errno == errno.ENOENT:
        return MediaError(FILE_VANISHED, f"{path}: file no longer exists")
    if isinstance(exc, PermissionError):
        return MediaError(UNREADABLE_FILE, f"{path}: permission denied")
    if exc.errno == errno.ELOOP:
        return MediaError(UNREADABLE_FILE, f"{path}: too many levels of symbolic links")
    reason = exc.strerror or type(exc).__name__
    return MediaError(UNREADABLE_FILE, f"{path}: {reason}")


def open_original(path: Path | str) -> io.BufferedReader:
    """Open a regular file for reading only; anything else raises MediaError."""
    # O_NONBLOCK so that a FIFO at the path cannot block us forever in open(); it has no
    # effect on regular files, and we refuse everything that is not one right after.
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise media_error_from_os(exc, path) from exc
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise MediaError(UNREADABLE_FILE, f"{path}: not a regular file")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
