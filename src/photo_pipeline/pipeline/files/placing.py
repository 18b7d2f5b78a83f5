"""Placing a file: a hard link within one filesystem, else a copy, each verified
against the catalogued hash before the new name appears.

Every placement ends in ``os.link`` (a hard link is created atomically and never
replaces an existing name), so a file that appears at the destination meanwhile is
never clobbered; every directory that changed is fsynced before the next step relies
on it. A copy keeps the original's permission bits (and owner, when run as root).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
from pathlib import Path

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media import MediaError, hash_file, hashing
from photo_pipeline.pipeline.files.spots import (
    Identity,
    Spot,
    changed_since,
    discard,
    hard_link,
    open_for_reading,
    write_error,
)

CHUNK = 1 << 20
_KERNEL_STEP = 64 << 20  # bytes per copy_file_range call
_buffers = threading.local()


def content_hash(path: str) -> str | None:
    """BLAKE3 of the file at ``path``, or None when there is nothing there. A symlink
    is not read through (``symlink_not_followed``, as ``open_for_reading``)."""
    try:
        mode = os.lstat(path).st_mode
        if stat.S_ISDIR(mode):
            raise ItemError("not_a_file", f"{path}: is a folder")
        if stat.S_ISLNK(mode):
            raise ItemError("symlink_not_followed", f"{path}: a symbolic link, not read")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ItemError("unreadable_file", f"{path}: {exc.strerror}") from exc
    try:
        return hash_file(Path(path))
    except MediaError as exc:
        if exc.code == "file_vanished":
            return None
        raise ItemError("unreadable_file", exc.detail) from exc


def hash_at(place: Spot) -> tuple[str, Identity] | None:
    """The hash and identity of the file at ``place``, or None when nothing is there."""
    fd = open_for_reading(place)
    if fd is None:
        return None
    try:
        return hash_fd(fd, place.path), Identity.of(os.fstat(fd))
    finally:
        os.close(fd)


def place_by_link(source: Spot, dest: Spot, expected: str) -> tuple[os.stat_result, Identity]:
    """Give ``source``'s inode the extra name ``dest`` (a move within one filesystem:
    no bytes copied), after checking its content is ``expected``. Returns the new
    name's stat and the identity the source had when it was hashed."""
    found = hash_at(source)
    if found is None:
        raise ItemError("missing", f"{source.path}: the source file no longer exists")
    digest, seen = found
    if digest != expected:
        raise ItemError("content_changed", _changed(source.path, expected, digest))
    hard_link(source, dest)
    linked = os.stat(dest.name, dir_fd=dest.fd, follow_symlinks=False)
    if Identity.of(linked) != seen:
        # Replaced or written between the hash and the link: take the new name back
        # (the inode keeps its source name) and let a later scan see the new bytes.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(dest.name, dir_fd=dest.fd)
        raise ItemError("content_changed", f"{source.path}: changed while it was being moved")
    os.fsync(dest.fd)
    return linked, seen


def place_by_copy(
    source: Spot, dest: Spot, temp_name: str, expected: str, sync_folder: bool = True
) -> tuple[os.stat_result, Identity]:
    """Copy ``source`` to ``temp_name`` next to ``dest``, fsync it, check both what
    was read and what is on disk hash to ``expected``, then link it into place and
    fsync the folder. Returns the placed file's stat and the source's identity when
    it was read. ``sync_folder=False`` leaves the folder's fsync to the caller, who
    must make it before relying on the new name (one per folder for a batch of
    files: before journalling them placed, before removing their sources)."""
    temp = dest.sibling(temp_name)
    discard(temp)
    try:
        read_hash, seen = _copy(source, temp)
        if read_hash != expected:
            raise ItemError("content_changed", _changed(source.path, expected, read_hash))
        written = hash_at(temp)
        if written is None or written[0] != expected:
            raise ItemError(
                "copy_mismatch",
                f"{temp.path}: the copy hashes to {written and written[0]}, expected {expected}",
            )
        hard_link(temp, dest)
    finally:
        discard(temp)
    if sync_folder:
        os.fsync(dest.fd)
    return os.stat(dest.name, dir_fd=dest.fd, follow_symlinks=False), seen


def _buffer() -> memoryview:
    """This thread's copy buffer (for a copy the kernel cannot make): reading into
    one reused buffer, rather than into a new bytes object per chunk, takes well
    under half the CPU (measured)."""
    buffer: memoryview | None = getattr(_buffers, "chunk", None)
    if buffer is None:
        buffer = _buffers.chunk = memoryview(bytearray(CHUNK))
    return buffer


def hash_fd(fd: int, path: str) -> str:
    """BLAKE3 of the open file ``fd`` (``path`` names it in the error)."""
    try:
        return hashing.hash_fd(fd)
    except OSError as exc:
        raise ItemError("unreadable_file", f"{path}: {exc.strerror}") from exc


def _copy(source: Spot, temp: Spot) -> tuple[str, Identity]:
    """Copy ``source`` into a new ``temp`` (fsynced, with the source's mode, owner
    and mtime), returning the hash of the source's bytes and its identity. The bytes
    are hashed as read, then copied by the kernel: a change in between is caught by
    the source's identity here (``content_changed``) and, whatever the clock's
    granularity, by the hash of the copy that the caller checks."""
    src = open_for_reading(source)
    if src is None:
        raise ItemError("missing", f"{source.path}: the source file no longer exists")
    try:
        info = os.fstat(src)
        try:
            out = os.open(
                temp.name,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC,
                0o600,
                dir_fd=temp.fd,
            )
        except OSError as exc:
            raise write_error(exc, temp.path) from exc
        try:
            read_hash = hash_fd(src, source.path)
            _copy_bytes(src, out, source.path)
            _copy_attributes(out, info)
            os.fsync(out)
        except OSError as exc:
            raise write_error(exc, temp.path) from exc
        finally:
            os.close(out)
        if changed_since(info, os.fstat(src)):
            raise ItemError("content_changed", f"{source.path}: changed while it was copied")
        return read_hash, Identity.of(info)
    finally:
        os.close(src)


# copy_file_range cannot copy between these two files here: read and write instead.
_NO_KERNEL_COPY = {errno.EXDEV, errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP, errno.EBADF}


def _copy_bytes(src: int, out: int, path: str) -> None:
    """Copy all of ``src`` into the empty ``out``: by the kernel (copy_file_range:
    no pass through Python, and a third of the CPU of read + write, measured), else
    read and written here."""
    offset = 0
    try:
        while copied := os.copy_file_range(src, out, _KERNEL_STEP, offset, offset):
            offset += copied
        return
    except OSError as exc:
        if exc.errno not in _NO_KERNEL_COPY:
            raise
    buffer = _buffer()
    while True:
        try:
            read = os.preadv(src, [buffer], offset)
        except OSError as exc:
            raise ItemError("unreadable_file", f"{path}: {exc.strerror}") from exc
        if not read:
            return
        write_all(out, buffer[:read], offset)
        offset += read


def _copy_attributes(out: int, info: os.stat_result) -> None:
    """The copy is as private as the original (never wider), same owner when we may."""
    if os.geteuid() == 0:
        os.fchown(out, info.st_uid, info.st_gid)
    os.fchmod(out, stat.S_IMODE(info.st_mode))
    os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))


def write_all(fd: int, data: bytes | memoryview, offset: int | None = None) -> None:
    """Write all of ``data`` at the file's position, or at ``offset``."""
    view = memoryview(data)
    while view:
        if offset is None:
            written = os.write(fd, view)
        else:
            written = os.pwrite(fd, view, offset)
            offset += written
        view = view[written:]


def _changed(path: str, expected: str, found: str) -> str:
    return (
        f"{path}: content changed since the last scan (hash {found[:12]}…, catalogued "
        f"{expected[:12]}…); not copied — scan again, then organize"
    )
