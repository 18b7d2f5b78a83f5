"""Crash-safe placing and removing of originals, for ``organize`` and its undo.

Every placement ends in ``os.link`` (a hard link is created atomically and never
replaces an existing name), so a file that appears at the destination meanwhile is
never clobbered; every directory that changed is fsynced before the next step relies
on it. Failures raise ``ItemError`` with a stable code:

- ``missing``: the source is gone;
- ``content_changed``: the source's bytes are not the catalogued ones (never copied);
- ``destination_taken``: a different file holds the destination name;
- ``copy_mismatch``: what landed on disk does not hash to the catalogued value;
- ``disk_full``, ``destination_unwritable``, ``unreadable_file``: the OS refused;
- ``not_a_file``: a folder is where a file was expected;
- ``cross_device``: a hard link across filesystems (the caller copies instead).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

import blake3

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media import MediaError, hash_file

_CHUNK = 1 << 20
_WRITE_REFUSED = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only filesystem",
    errno.ENOTDIR: "a path component is a file, not a folder",
    errno.EEXIST: "a path component is a file, not a folder",
    errno.EISDIR: "the name is a folder",
}


def fsync_dir(path: str) -> None:
    """Make the directory's entries (a created, linked or removed name) durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def make_dirs(path: str) -> None:
    """Create ``path`` and its missing parents, each made durable in its parent."""
    missing = []
    current = path
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise write_error(FileExistsError(errno.EEXIST, "exists"), folder) from None
            continue
        except OSError as exc:
            raise write_error(exc, folder) from exc
        fsync_dir(os.path.dirname(folder))


def content_hash(path: str) -> str | None:
    """BLAKE3 of the file at ``path``, or None when there is nothing there."""
    try:
        if stat.S_ISDIR(os.lstat(path).st_mode):
            raise ItemError("not_a_file", f"{path}: is a folder")
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ItemError("unreadable_file", f"{path}: {exc.strerror}") from exc
    try:
        return hash_file(path)  # type: ignore[arg-type]
    except MediaError as exc:
        if exc.code == "file_vanished":
            return None
        raise ItemError("unreadable_file", exc.detail) from exc


def same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def place_by_link(source: str, dest: str, expected: str) -> os.stat_result:
    """Give ``source``'s inode the extra name ``dest`` (a move within one
    filesystem: no bytes copied), after checking its content is ``expected``."""
    found = content_hash(source)
    if found is None:
        raise ItemError("missing", f"{source}: the source file no longer exists")
    if found != expected:
        raise ItemError("content_changed", _changed(source, expected, found))
    make_dirs(os.path.dirname(dest))
    _link(source, dest)
    fsync_dir(os.path.dirname(dest))
    return os.stat(dest)


def place_by_copy(source: str, dest: str, temp: str, expected: str) -> os.stat_result:
    """Copy ``source`` to ``temp`` next to ``dest``, fsync it, check both what was
    read and what is on disk hash to ``expected``, then link it into place."""
    make_dirs(os.path.dirname(dest))
    discard(temp)
    try:
        read_hash, info = _copy(source, temp)
        if read_hash != expected:
            raise ItemError("content_changed", _changed(source, expected, read_hash))
        written = content_hash(temp)
        if written != expected:
            raise ItemError(
                "copy_mismatch", f"{temp}: the copy hashes to {written}, expected {expected}"
            )
        os.utime(temp, ns=(info.st_atime_ns, info.st_mtime_ns))
        _link(temp, dest)
    finally:
        discard(temp)
    fsync_dir(os.path.dirname(dest))
    return os.stat(dest)


def remove(path: str) -> None:
    """Delete ``path`` (if still there) and make that durable."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        return
    fsync_dir(os.path.dirname(path))


def discard(path: str) -> None:
    """Delete a temporary file if it exists."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(path)


def _link(existing: str, new: str) -> None:
    try:
        os.link(existing, new)
    except FileExistsError:
        raise ItemError(
            "destination_taken", f"{new}: another file appeared at the destination name"
        ) from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise ItemError("cross_device", f"{existing} and {new} are on two filesystems") from exc
        raise write_error(exc, new) from exc


def _copy(source: str, temp: str) -> tuple[str, os.stat_result]:
    """Stream ``source`` into a new ``temp`` (fsynced), returning the hash of the
    bytes read and the source's stat."""
    try:
        src = os.open(source, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise ItemError("missing", f"{source}: the source file no longer exists") from None
    except OSError as exc:
        raise ItemError("unreadable_file", f"{source}: {exc.strerror}") from exc
    try:
        info = os.fstat(src)
        if not stat.S_ISREG(info.st_mode):
            raise ItemError("unreadable_file", f"{source}: not a regular file")
        try:
            out = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise write_error(exc, temp) from exc
        hasher = blake3.blake3()
        try:
            while True:
                try:
                    chunk = os.read(src, _CHUNK)
                except OSError as exc:
                    raise ItemError("unreadable_file", f"{source}: {exc.strerror}") from exc
                if not chunk:
                    break
                hasher.update(chunk)
                _write_all(out, chunk, temp)
            os.fsync(out)
        except OSError as exc:
            raise write_error(exc, temp) from exc
        finally:
            os.close(out)
        return hasher.hexdigest(), info
    finally:
        os.close(src)


def _write_all(fd: int, data: bytes, path: str) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def write_error(exc: OSError, path: str) -> ItemError:
    """The item failure for an OS error while writing ``path``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ItemError("disk_full", f"{path}: no space left on the destination")
    reason = _WRITE_REFUSED.get(exc.errno or 0, exc.strerror or type(exc).__name__)
    return ItemError("destination_unwritable", f"{path}: {reason}")


def _changed(path: str, expected: str, found: str) -> str:
    return (
        f"{path}: content changed since the last scan (hash {found[:12]}…, catalogued "
        f"{expected[:12]}…); not copied — scan again, then organize"
    )
