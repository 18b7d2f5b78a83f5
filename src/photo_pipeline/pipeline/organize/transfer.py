"""Crash-safe placing and removing of originals, for ``organize`` and its undo.

Files are reached through a ``Spot``: a folder opened one component at a time below
a root without following symlinks (a symlinked folder is refused with
``symlinked_folder``), and a name in it. Every later step works on that descriptor,
so a folder swapped for a symlink after the check cannot send a write, a link or an
unlink outside the root.

Every placement ends in ``os.link`` (a hard link is created atomically and never
replaces an existing name), so a file that appears at the destination meanwhile is
never clobbered; every directory that changed is fsynced before the next step relies
on it. A copy keeps the original's permission bits (and owner, when run as root).

Removing a file that was placed elsewhere (the source of a move, a copy being undone)
goes through ``retire``, which proves that the bytes removed are the bytes placed:
the name is first renamed to a private "parking" name in the same folder (so a save
or replace by rename lands beside it, untouched), then the parked file must still be
the very file that was read (device, inode, size, mtime), nobody may hold it open (a
Linux write lease: any later ``open`` by another process waits until we are done),
and its bytes must hash to the expected value. Only then is it unlinked. On any
doubt the file goes back to its name and the item fails with ``source_changed`` or
``source_in_use``: both copies are kept. Where leases are not available (NFS, SMB,
a file owned by another user), the checks run without one, and the parked inode is
examined again after the unlink; a write that slipped in is written back.

Failures raise ``ItemError`` with a stable code:

- ``missing``: the source is gone;
- ``content_changed``: the source's bytes are not the catalogued ones (never copied);
- ``source_changed``, ``source_in_use``: a file to remove changed or was held open
  during the move; it was kept;
- ``destination_taken``: a different file holds the destination name;
- ``copy_mismatch``: what landed on disk does not hash to the catalogued value;
- ``disk_full``, ``destination_unwritable``, ``unreadable_file``: the OS refused;
- ``not_a_file``: a folder is where a file was expected;
- ``symlinked_folder``: a folder on the way is a symbolic link;
- ``cross_device``: a hard link across filesystems (the caller copies instead).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import stat
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import blake3

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.media import MediaError, hash_file

_CHUNK = 1 << 20
_KERNEL_STEP = 64 << 20  # bytes per copy_file_range call
_buffers = threading.local()
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_REFUSED = {
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EROFS: "read-only filesystem",
    errno.ENOTDIR: "a path component is a file, not a folder",
    errno.EEXIST: "a path component is a file, not a folder",
    errno.EISDIR: "the name is a folder",
}

# A lease break signals its holder (SIGIO, whose default action ends the process)
# until ``retire`` clears the owner right after taking the lease; ignore it
# process-wide for that instant. Only the main thread may set a handler.
if threading.current_thread() is threading.main_thread() and (
    signal.getsignal(signal.SIGIO) == signal.SIG_DFL
):
    signal.signal(signal.SIGIO, signal.SIG_IGN)


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
    symlink on the way. ``create`` makes missing folders (each made durable);
    without it a missing folder raises ``missing``."""
    folder, name = os.path.split(relative)
    fd = open_folder(root, folder, create=create)
    try:
        yield Spot(fd, name, os.path.join(root, relative))
    finally:
        os.close(fd)


def open_folder(root: str, relative: str, *, create: bool = False) -> int:
    """A descriptor of the folder ``relative`` below ``root`` (see ``spot``)."""
    try:
        fd = os.open(root, _DIR_FLAGS)
    except OSError as exc:
        raise _folder_error(exc, root, create) from exc
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
                    os.mkdir(part, dir_fd=fd)
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


def sweep_temp_files(folders: Iterable[str], kind: str, job_id: str) -> None:
    """Remove a job's temp files left in ``folders`` by a crash (never through a
    symlinked folder; parked files are never swept: they get their names back, by
    the entry that parked them or by ``pipeline.parked``)."""
    prefix = f".pp-{kind}-{job_id[:8]}-"
    for folder in set(folders):
        if os.path.realpath(folder) != folder:
            continue
        with contextlib.suppress(OSError):
            for name in os.listdir(folder):
                if name.startswith(prefix) and name.endswith(".tmp"):
                    os.unlink(os.path.join(folder, name))


def device(path: str) -> int | None:
    """The filesystem of ``path``, or None when it cannot be told."""
    try:
        return os.stat(path).st_dev
    except OSError:
        return None


def device_of_folder(path: str) -> int | None:
    """The filesystem that a file created at ``path`` would land on."""
    folder = os.path.dirname(path)
    while folder and not os.path.isdir(folder):
        folder = os.path.dirname(folder)
    return device(folder)


def place(
    source: Spot,
    dest: Spot,
    temp_name: str,
    expected: str,
    *,
    link: bool,
    sync_folder: bool = True,
) -> tuple[os.stat_result, Identity]:
    """Put ``source``'s bytes at ``dest``: a hard link when ``link`` (a move within one
    filesystem), else, or across filesystems, a verified copy (``place_by_copy``;
    ``sync_folder`` as there)."""
    if link:
        try:
            return place_by_link(source, dest, expected)
        except ItemError as exc:
            if exc.code != "cross_device":
                raise
    return place_by_copy(source, dest, temp_name, expected, sync_folder)


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
        return hash_file(Path(path))
    except MediaError as exc:
        if exc.code == "file_vanished":
            return None
        raise ItemError("unreadable_file", exc.detail) from exc


def hash_at(place: Spot) -> tuple[str, Identity] | None:
    """The hash and identity of the file at ``place``, or None when nothing is there."""
    fd = _open_for_reading(place)
    if fd is None:
        return None
    try:
        return _hash_fd(fd, place.path), Identity.of(os.fstat(fd))
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
    _link(source, dest)
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
        _link(temp, dest)
    finally:
        discard(temp)
    if sync_folder:
        os.fsync(dest.fd)
    return os.stat(dest.name, dir_fd=dest.fd, follow_symlinks=False), seen


def retire(place: Spot, expected: str, seen: Identity | None, parking_name: str) -> None:
    """Delete ``place`` (a file whose bytes were placed elsewhere) only when the bytes
    removed are provably ``expected`` and, when ``seen`` is given, the very file that
    was read. Otherwise it stays (see the module docstring). Nothing there: done."""
    parked = place.sibling(parking_name)
    try:
        os.rename(place.name, parked.name, src_dir_fd=place.fd, dst_dir_fd=place.fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise write_error(exc, place.path) from exc
    try:
        fd = os.open(parked.name, _READ_FLAGS | os.O_NOFOLLOW, dir_fd=place.fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink: removing it loses no bytes
            _unlink(parked)
            return
        unpark(place, parking_name)
        raise ItemError("unreadable_file", f"{place.path}: {exc.strerror}") from exc
    try:
        _retire_parked(fd, place, parked, expected, seen)
    except ItemError:
        raise  # the file was given its name back (or is gone for good, verified)
    except BaseException:
        # An unforeseen error must not leave the file under its private name.
        with contextlib.suppress(OSError):
            unpark(place, parked.name)
        raise
    finally:
        os.close(fd)  # also releases the lease


def _retire_parked(
    fd: int, place: Spot, parked: Spot, expected: str, seen: Identity | None
) -> None:
    before = os.fstat(fd)
    if not stat.S_ISREG(before.st_mode):
        unpark(place, parked.name)
        raise ItemError("not_a_file", f"{place.path}: not a regular file; kept")
    if seen is not None and Identity.of(before) != seen:
        unpark(place, parked.name)
        raise ItemError("source_changed", f"{place.path}: changed during the move; both kept")
    leased = _take_write_lease(fd)
    if leased is None:
        unpark(place, parked.name)
        raise ItemError(
            "source_in_use", f"{place.path}: another program has it open; both copies kept"
        )
    digest = _hash_fd(fd, place.path)
    if digest != expected:
        unpark(place, parked.name)
        raise ItemError("source_changed", f"{place.path}: changed during the move; both kept")
    if leased:
        if fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_WRLCK:  # someone opened it meanwhile
            unpark(place, parked.name)
            raise ItemError(
                "source_in_use", f"{place.path}: opened by another program; both copies kept"
            )
    elif _changed_since(before, os.fstat(fd)):
        unpark(place, parked.name)
        raise ItemError("source_changed", f"{place.path}: changed during the move; both kept")
    _unlink(parked)
    if not leased and _changed_since(before, os.fstat(fd)):
        # Written through a descriptor opened before the rename, after our last
        # look: the bytes are still reachable through ``fd``; put them back.
        _write_back(fd, place)
        raise ItemError("source_changed", f"{place.path}: written during the move; both kept")


def _take_write_lease(fd: int) -> bool | None:
    """True with a write lease held on ``fd``; None when another descriptor of the
    file is open anywhere (a writer might still write); False when this filesystem
    or user cannot take leases."""
    try:
        fcntl.fcntl(fd, fcntl.F_SETLEASE, fcntl.F_WRLCK)
    except OSError as exc:
        if exc.errno in (errno.EAGAIN, errno.EBUSY):
            return None
        return False
    # No signal to this process when the lease is broken: we poll F_GETLEASE.
    fcntl.fcntl(fd, fcntl.F_SETOWN, 0)
    return True


def _changed_since(before: os.stat_result, now: os.stat_result) -> bool:
    return (now.st_size, now.st_mtime_ns) != (before.st_size, before.st_mtime_ns)


def unpark(place: Spot, parking_name: str) -> str | None:
    """Give a parked file its name back; when the name was taken meanwhile (a save
    by rename), keep it visible as ``NAME (kept N).EXT`` instead: never over another
    file. Returns the name it has now; None when nothing was parked there (put back
    by another process first, or removed). Safe to run in two processes at once."""
    parked = place.sibling(parking_name)
    restored = None
    for candidate in _names_for(place.name):
        try:
            os.link(
                parked.name,
                candidate,
                src_dir_fd=place.fd,
                dst_dir_fd=place.fd,
                follow_symlinks=False,
            )
        except FileExistsError:
            if _same_file(place.fd, parked.name, candidate):
                restored = candidate  # linked back by another process (or a run that died)
                break
            continue
        except FileNotFoundError:
            return None
        restored = candidate
        break
    if restored is None:
        return None  # 10,000 names taken: it stays parked, as it was
    with contextlib.suppress(FileNotFoundError):
        os.unlink(parked.name, dir_fd=place.fd)
    os.fsync(place.fd)
    return restored


def _same_file(folder: int, name: str, other: str) -> bool:
    try:
        one = os.stat(name, dir_fd=folder, follow_symlinks=False)
        two = os.stat(other, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (one.st_dev, one.st_ino) == (two.st_dev, two.st_ino)


def unpark_leftovers(place: Spot, prefix: str) -> None:
    """Restore files parked under ``prefix`` (``PrivateNames.prefix``: one entry of
    one job, any fencing token) by a process that died mid-``retire``."""
    with contextlib.suppress(OSError):
        for name in os.listdir(place.fd):
            # The dash ends the entry's number: entry 1 is not entry 12.
            if name.startswith(prefix + "-") and name.endswith(".parked"):
                unpark(place, name)


def _names_for(name: str) -> Iterator[str]:
    yield name
    stem, ext = os.path.splitext(name)
    for n in range(1, 10_000):
        yield f"{stem} (kept {n}){ext}"


def _write_back(fd: int, place: Spot) -> None:
    os.lseek(fd, 0, os.SEEK_SET)
    for name in _names_for(place.name):
        try:
            out = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600, dir_fd=place.fd)
        except FileExistsError:
            continue
        try:
            while chunk := os.read(fd, _CHUNK):
                _write_all(out, chunk)
            info = os.fstat(fd)
            os.fchmod(out, stat.S_IMODE(info.st_mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.fsync(out)
        finally:
            os.close(out)
        os.fsync(place.fd)
        return


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


def _unlink(place: Spot) -> None:
    os.unlink(place.name, dir_fd=place.fd)
    os.fsync(place.fd)


def _link(existing: Spot, new: Spot) -> None:
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


def _open_for_reading(place: Spot) -> int | None:
    try:
        fd = os.open(place.name, _READ_FLAGS, dir_fd=place.fd)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as exc:
        raise ItemError("unreadable_file", f"{place.path}: {exc.strerror}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        if stat.S_ISDIR(mode):
            raise ItemError("not_a_file", f"{place.path}: is a folder")
        raise ItemError("unreadable_file", f"{place.path}: not a regular file")
    return fd


def _buffer() -> memoryview:
    """This thread's read buffer: reading into one reused buffer, rather than into a
    new bytes object per chunk, takes well under half the CPU (measured)."""
    buffer: memoryview | None = getattr(_buffers, "chunk", None)
    if buffer is None:
        buffer = _buffers.chunk = memoryview(bytearray(_CHUNK))
    return buffer


def _hash_fd(fd: int, path: str) -> str:
    hasher = blake3.blake3()
    buffer = _buffer()
    offset = 0
    while True:
        try:
            read = os.preadv(fd, [buffer], offset)
        except OSError as exc:
            raise ItemError("unreadable_file", f"{path}: {exc.strerror}") from exc
        if not read:
            return hasher.hexdigest()
        hasher.update(buffer[:read])
        offset += read


def _copy(source: Spot, temp: Spot) -> tuple[str, Identity]:
    """Copy ``source`` into a new ``temp`` (fsynced, with the source's mode, owner
    and mtime), returning the hash of the source's bytes and its identity. The bytes
    are hashed as read, then copied by the kernel: a change in between is caught by
    the source's identity here (``content_changed``) and, whatever the clock's
    granularity, by the hash of the copy that the caller checks."""
    src = _open_for_reading(source)
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
            read_hash = _hash_fd(src, source.path)
            _copy_bytes(src, out, source.path)
            _copy_attributes(out, info)
            os.fsync(out)
        except OSError as exc:
            raise write_error(exc, temp.path) from exc
        finally:
            os.close(out)
        if _changed_since(info, os.fstat(src)):
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
        _write_all(out, buffer[:read], offset)
        offset += read


def _copy_attributes(out: int, info: os.stat_result) -> None:
    """The copy is as private as the original (never wider), same owner when we may."""
    if os.geteuid() == 0:
        os.fchown(out, info.st_uid, info.st_gid)
    os.fchmod(out, stat.S_IMODE(info.st_mode))
    os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))


def _write_all(fd: int, data: bytes | memoryview, offset: int | None = None) -> None:
    """Write all of ``data`` at the file's position, or at ``offset``."""
    view = memoryview(data)
    while view:
        if offset is None:
            written = os.write(fd, view)
        else:
            written = os.pwrite(fd, view, offset)
            offset += written
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
