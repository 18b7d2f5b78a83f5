"""Files reached through a ``Spot``, for ``organize``, dedupe and their undos.

A ``Spot`` is a folder opened below a root without following symlinks, and a name in
it. The root itself is a real path recorded when the job was queued and is opened with
no link anywhere on its path (``resolve``: openat2 where the kernel has it); a root
swapped for a link since is refused (``root_changed``). Below it each folder is opened
with ``O_NOFOLLOW`` (a symlinked folder is refused with ``symlinked_folder``). Every
later step works on that descriptor, so a folder swapped for a symlink after the check
cannot send a read, a write, a link or an unlink outside the root.

Here too: what a file was when read (``Identity``), the private names of an entry's
temp and parked files, linking and unlinking by descriptor with the folder fsynced,
and the ``ItemError`` for an OS error while writing (see ``transfer`` for the codes).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.pipeline.files import resolve

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
# O_NOFOLLOW: a symlink is never read through. It may lead out of the roots (swapped
# in after the scan), and it is not the photo: its target is placed as itself.
READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW
_WRITE_REFUSED = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only filesystem",
    errno.ENOTDIR: "a path component is a file, not a folder",
    errno.EEXIST: "a path component is a file, not a folder",
    errno.EISDIR: "the name is a folder",
}


@dataclass(frozen=True)
class Identity:
    """What a file was when its bytes were read: a later change of any of these
    means other bytes may be there now."""

    device: int
    inode: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, info: os.stat_result) -> Identity:
        return cls(info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@dataclass(frozen=True)
class Spot:
    """A name in an open folder (``fd``); ``path`` is for messages only."""

    fd: int
    name: str
    path: str

    def sibling(self, name: str) -> Spot:
        return Spot(self.fd, name, os.path.join(os.path.dirname(self.path), name))


@contextlib.contextmanager
def spot(root: str, relative: str, *, create: bool = False) -> Iterator[Spot]:
    """The file ``relative`` below ``root``, its folder opened without following a
    symlink on the way (``open_folder``). ``create`` makes missing folders (each made
    durable); without it a missing folder raises ``missing``."""
    folder, name = os.path.split(relative)
    fd = open_folder(root, folder, create=create)
    try:
        yield Spot(fd, name, os.path.join(root, relative))
    finally:
        os.close(fd)


def open_folder(root: str, relative: str, *, create: bool = False, mode: int = 0o777) -> int:
    """A descriptor of the folder ``relative`` below ``root``.

    ``root`` is a real path the job recorded when it was queued (a source, the
    destination, the quarantine): no component of it may be a symlink now. A root
    swapped for a link (or for a file) since is refused with ``root_changed``, never
    followed. Below it no symlink is followed either (``symlinked_folder``). ``create``
    makes missing folders below the root (not the root: ``open_root``), each with
    ``mode`` (less the umask) and made durable."""
    fd = open_root(root)
    return _descend(fd, root, relative, create=create, mode=mode)


def open_root(root: str, *, create: bool = False, mode: int = 0o777) -> int:
    """A descriptor of the folder ``root`` (see ``open_folder``); with ``create`` the
    missing part of it is made, below the deepest folder that exists."""
    root = os.path.abspath(root)
    try:
        return resolve.open_folder_no_links(root)
    except FileNotFoundError:
        if not create:
            raise ItemError("missing", f"{root}: the folder no longer exists") from None
    except OSError as exc:
        raise _root_error(exc, root) from exc
    existing, missing = root, []
    while True:
        existing, name = os.path.split(existing)
        missing.append(name)
        try:
            fd = resolve.open_folder_no_links(existing)
            break
        except FileNotFoundError:
            if existing == os.sep:
                raise ItemError("missing", f"{root}: no folder on its path exists") from None
        except OSError as exc:
            raise _root_error(exc, existing) from exc
    return _descend(fd, existing, os.path.join(*reversed(missing)), create=True, mode=mode)


def root_device(root: str, *, create: bool = False, mode: int = 0o777) -> int:
    """The filesystem of the folder ``root``, opened as ``open_root`` does (made when
    missing with ``create``): a job's first look at its destination or quarantine."""
    fd = open_root(root, create=create, mode=mode)
    try:
        return os.fstat(fd).st_dev
    finally:
        os.close(fd)


def _root_error(exc: OSError, root: str) -> ItemError:
    if exc.errno in (errno.ELOOP, errno.ENOTDIR):
        return ItemError(
            "root_changed",
            f"{root}: a symbolic link or a file is on its path now, not the folder the job "
            "was queued with; nothing was done there",
        )
    return ItemError("unreadable_file", f"{root}: {exc.strerror}")


def _descend(fd: int, root: str, relative: str, *, create: bool, mode: int) -> int:
    """Open ``relative`` below ``fd`` (which this closes on failure) one folder at a
    time, never through a symlink; ``create`` makes what is missing."""
    path = root
    try:
        for part in (p for p in relative.split(os.sep) if p):
            path = os.path.join(path, part)
            try:
                child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise ItemError("missing", f"{path}: the folder no longer exists") from None
                try:
                    os.mkdir(part, mode, dir_fd=fd)
                    os.fsync(fd)
                except FileExistsError:
                    pass  # made meanwhile by someone else: opened below like any other
                except OSError as exc:
                    raise write_error(exc, path) from exc
                try:
                    child = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
                except OSError as exc:
                    raise _folder_error(exc, path, create) from exc
            except OSError as exc:
                raise _folder_error(exc, path, create) from exc
            os.close(fd)
            fd = child
    except BaseException:
        os.close(fd)
        raise
    return fd


def _folder_error(exc: OSError, path: str, create: bool) -> ItemError:
    if exc.errno == errno.ELOOP or (exc.errno == errno.ENOTDIR and os.path.islink(path)):
        return ItemError("symlinked_folder", f"{path}: a symbolic link, not followed")
    if isinstance(exc, FileNotFoundError):
        return ItemError("missing", f"{path}: the folder no longer exists")
    if create:
        return write_error(exc, path)
    return ItemError("unreadable_file", f"{path}: {exc.strerror}")


@dataclass(frozen=True)
class PrivateNames:
    """The names of a journal entry's temp and parked files: hidden (scans skip them),
    named by job kind, job and entry so that a resumed run and the final sweep find
    them, and by fencing token so that a worker that lost its lease and has not
    noticed yet never shares one with the worker that took over."""

    kind: str
    job_id: str
    seq: int
    token: int

    @property
    def prefix(self) -> str:
        return f".pp-{self.kind}-{self.job_id[:8]}-{self.seq}"

    @property
    def temp(self) -> str:
        return f"{self.prefix}-{self.token}.tmp"

    @property
    def parking(self) -> str:
        return f"{self.prefix}-{self.token}.parked"


def sweep_temp_files(folders: Iterable[tuple[str, str]], kind: str, job_id: str) -> None:
    """Remove a job's temp files left by a crash in ``folders`` (``(root, relative)``
    pairs), each reached as ``open_folder`` does; a folder that cannot be reached so is
    left alone. Parked files are never swept: they get their names back, by the entry
    that parked them or by ``pipeline.files.parked``."""
    prefix = f".pp-{kind}-{job_id[:8]}-"
    for root, folder in set(folders):
        try:
            fd = open_folder(root, folder)
        except ItemError:
            continue
        try:
            for name in os.listdir(fd):
                if name.startswith(prefix) and name.endswith(".tmp"):
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=fd)
        except OSError:
            pass
        finally:
            os.close(fd)


def remove_empty_folders(root: str, folders: Iterable[str]) -> None:
    """Each of ``folders`` (relative to ``root``) and its parents below ``root`` that is
    empty, deepest first, reached as ``open_folder`` does (a folder behind a link is
    left alone)."""
    todo: set[str] = set()
    for folder in folders:
        while folder not in ("", os.curdir, os.sep):
            todo.add(folder)
            folder = os.path.dirname(folder)
    for folder in sorted(todo, key=lambda f: f.count(os.sep), reverse=True):
        parent, name = os.path.split(folder)
        _remove_if_empty(root, parent, name)


def remove_empty_tree(top: str) -> None:
    """``top`` and every folder below it left empty, deepest first, by descriptor:
    never through a link."""
    try:
        fd = open_root(top)
    except ItemError:
        return
    try:
        _prune(fd)
    finally:
        os.close(fd)
    parent, name = os.path.split(os.path.abspath(top))
    _remove_if_empty(parent, "", name)


def _prune(fd: int) -> None:
    with contextlib.suppress(OSError):
        for entry in list(os.scandir(fd)):
            if not entry.is_dir(follow_symlinks=False):
                continue
            try:
                child = os.open(entry.name, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                continue
            try:
                _prune(child)
            finally:
                os.close(child)
            with contextlib.suppress(OSError):
                os.rmdir(entry.name, dir_fd=fd)


def _remove_if_empty(root: str, parent: str, name: str) -> None:
    try:
        fd = open_folder(root, parent)
    except ItemError:
        return
    try:
        with contextlib.suppress(OSError):  # not empty, or gone: kept
            os.rmdir(name, dir_fd=fd)
    finally:
        os.close(fd)


def changed_since(before: os.stat_result, now: os.stat_result) -> bool:
    return (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns)


def remove(place: Spot) -> None:
    """Delete ``place`` (if still there) and make that durable."""
    try:
        os.unlink(place.name, dir_fd=place.fd)
    except FileNotFoundError:
        return
    os.fsync(place.fd)


def discard(place: Spot) -> None:
    """Delete a temporary file if it exists."""
    with contextlib.suppress(FileNotFoundError, NotADirectoryError):
        os.unlink(place.name, dir_fd=place.fd)


def unlink_durably(place: Spot) -> None:
    os.unlink(place.name, dir_fd=place.fd)
    os.fsync(place.fd)


def hard_link(existing: Spot, new: Spot) -> None:
    try:
        os.link(
            existing.name,
            new.name,
            src_dir_fd=existing.fd,
            dst_dir_fd=new.fd,
            follow_symlinks=False,
        )
    except FileExistsError:
        raise ItemError(
            "destination_taken", f"{new.path}: another file appeared at the destination name"
        ) from None
    except FileNotFoundError:
        raise ItemError("missing", f"{existing.path}: the source file no longer exists") from None
    except OSError as exc:
        if exc.errno == errno.EXDEV:
            raise ItemError(
                "cross_device", f"{existing.path} and {new.path} are on two filesystems"
            ) from exc
        raise write_error(exc, new.path) from exc


def open_for_reading(place: Spot) -> int | None:
    try:
        fd = os.open(place.name, READ_FLAGS, dir_fd=place.fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise ItemError(
                "symlink_not_followed",
                f"{place.path}: a symbolic link; organize moves and copies only real files",
            ) from exc
        raise ItemError("unreadable_file", f"{place.path}: {exc.strerror}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ItemError("not_a_file", f"{place.path}: is a folder")
        raise ItemError("unreadable_file", f"{place.path}: not a regular file")
    return fd


def not_removable(exc: OSError, path: str) -> ItemError:
    """The item failure for a file to remove (a moved source) that cannot be."""
    return ItemError(
        "source_not_removable", f"{path}: cannot be removed ({_refusal(exc)}); it stays"
    )


def write_error(exc: OSError, path: str) -> ItemError:
    """The item failure for an OS error while writing ``path``."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return ItemError("disk_full", f"{path}: no space left on the destination")
    return ItemError("destination_unwritable", f"{path}: {_refusal(exc)}")


def _refusal(exc: OSError) -> str:
    return _WRITE_REFUSED.get(exc.errno or 0, exc.strerror or type(exc).__name__)
