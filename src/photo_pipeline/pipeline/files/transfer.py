"""Crash-safe placing and removing of originals, for ``organize`` and its undo.

The one module callers use: files are reached through a ``Spot`` (:mod:`.spots`:
a folder opened below a root without following symlinks), placed by a verified hard
link or copy (:mod:`.placing`), and removed here.

Removing a file that was placed elsewhere (the source of a move, a copy being undone)
goes through ``retire``, which proves that the bytes removed are the bytes placed:
the name is first renamed to a private "parking" name in the same folder (so a save
or replace by rename lands beside it, untouched), then the parked file must still be
the very file that was read (device, inode, size, mtime), nobody may hold it open (a
Linux write lease: any later ``open`` by another process waits until we are done),
and its bytes must hash to the expected value; last, the copy that keeps those bytes
must still be there, the very file placed (``still_there``: a worker paused past its
lease, whose job another worker finished and an undo then reversed, must not remove
the only copy). Only then is it unlinked. On any doubt the file goes back to its name
and the item fails with ``source_changed``, ``source_in_use`` or ``copy_gone``: both
copies are kept. Where leases are not available (NFS, SMB,
a file owned by another user), the checks run without one, and the parked inode is
examined again after the unlink; a write that slipped in is written back.

Failures raise ``ItemError`` with a stable code:

- ``missing``: the source is gone;
- ``content_changed``: the source's bytes are not the catalogued ones (never copied);
- ``source_changed``, ``source_in_use``: a file to remove changed or was held open
  during the move; it was kept;
- ``copy_gone``: the copy that was to keep the bytes of a file to remove is gone or
  changed; the file was kept;
- ``left_parked``: a file to remove could be neither removed nor given its name back
  (its folder went read-only meanwhile); the message says where it is;
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
import stat
from collections.abc import Callable, Iterator

from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.pipeline.files.lease_signals import ignore_lease_breaks
from photo_pipeline.pipeline.files.placing import (
    CHUNK,
    content_hash,
    hash_at,
    hash_fd,
    place_by_copy,
    place_by_link,
    write_all,
)
from photo_pipeline.pipeline.files.spots import (
    READ_FLAGS,
    Identity,
    PrivateNames,
    Spot,
    changed_since,
    discard,
    not_removable,
    open_folder,
    open_root,
    remove,
    remove_empty_folders,
    remove_empty_tree,
    root_device,
    spot,
    sweep_temp_files,
    unlink_durably,
    write_error,
)

# An item's error when its file could be neither removed nor given its name back
# (``files.parked`` gives it back later).
LEFT_PARKED = "left_parked"

ignore_lease_breaks()  # imported by a job thread, job_types has done it already


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


def retire(
    place: Spot,
    expected: str,
    seen: Identity | None,
    parking_name: str,
    *,
    kept: Callable[[], None],
) -> None:
    """Delete ``place`` (a file whose bytes were placed elsewhere) only when the bytes
    removed are provably ``expected`` and, when ``seen`` is given, the very file that
    was read, and when ``kept()`` (run last, just before the unlink) raises no
    ``ItemError``: the copy that keeps the bytes is there. Otherwise it stays (see the
    module docstring). Nothing there: done."""
    parked = place.sibling(parking_name)
    try:
        os.rename(place.name, parked.name, src_dir_fd=place.fd, dst_dir_fd=place.fd)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise not_removable(exc, place.path) from exc
    try:
        fd = os.open(parked.name, READ_FLAGS, dir_fd=place.fd)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink: removing it loses no bytes
            unlink_durably(parked)
            return
        unpark(place, parking_name)
        raise ItemError("unreadable_file", f"{place.path}: {exc.strerror}") from exc
    try:
        _retire_parked(fd, place, parked, expected, seen, kept)
    except ItemError:
        raise  # the file was given its name back (or is gone for good, verified)
    except BaseException as failure:
        # An unforeseen error must not leave the file under its private name.
        try:
            unpark(place, parked.name)
        except OSError as exc:  # the folder went read-only (a card failing), say
            if isinstance(failure, Exception):
                raise ItemError(
                    LEFT_PARKED,
                    f"{place.path}: could not be removed nor given its name back "
                    f"({exc.strerror}); it is kept, hidden, as {parked.path} until its "
                    "folder is writable again: the next import, organize or verify gives it "
                    "its name back",
                ) from failure
        raise
    finally:
        os.close(fd)  # also releases the lease


def _retire_parked(
    fd: int,
    place: Spot,
    parked: Spot,
    expected: str,
    seen: Identity | None,
    kept: Callable[[], None],
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
    digest = hash_fd(fd, place.path)
    if digest != expected:
        unpark(place, parked.name)
        raise ItemError("source_changed", f"{place.path}: changed during the move; both kept")
    if leased:
        if fcntl.fcntl(fd, fcntl.F_GETLEASE) != fcntl.F_WRLCK:  # someone opened it meanwhile
            unpark(place, parked.name)
            raise ItemError(
                "source_in_use", f"{place.path}: opened by another program; both copies kept"
            )
    elif changed_since(before, os.fstat(fd)):
        unpark(place, parked.name)
        raise ItemError("source_changed", f"{place.path}: changed during the move; both kept")
    try:
        kept()
    except ItemError:
        unpark(place, parked.name)
        raise
    unlink_durably(parked)
    if not leased and changed_since(before, os.fstat(fd)):
        # Written through a descriptor opened before the rename, after our last
        # look: the bytes are still reachable through ``fd``; put them back.
        _write_back(fd, place)
        raise ItemError("source_changed", f"{place.path}: written during the move; both kept")


def still_there(copy: Spot, identity: Identity) -> Callable[[], None]:
    """``retire``'s last check when ``copy`` keeps the bytes: it must still be the
    file ``identity`` describes (placed by this run, or found there and hashed)."""

    def check() -> None:
        try:
            info = os.stat(copy.name, dir_fd=copy.fd, follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is None or Identity.of(info) != identity:
            raise ItemError(
                "copy_gone",
                f"{copy.path}: the copy that keeps these bytes is gone or changed; this file stays",
            )

    return check


def checked(*checks: Callable[[], None]) -> Callable[[], None]:
    """``retire``'s last check made of several, run in order (the job's lease, say,
    then the copy that keeps the bytes)."""

    def check() -> None:
        for one in checks:
            one()

    return check


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
            while chunk := os.read(fd, CHUNK):
                write_all(out, chunk)
            info = os.fstat(fd)
            os.fchmod(out, stat.S_IMODE(info.st_mode))
            os.utime(out, ns=(info.st_atime_ns, info.st_mtime_ns))
            os.fsync(out)
        finally:
            os.close(out)
        os.fsync(place.fd)
        return


__all__ = [
    "Identity",
    "PrivateNames",
    "Spot",
    "checked",
    "content_hash",
    "discard",
    "hash_at",
    "open_folder",
    "open_root",
    "place",
    "place_by_copy",
    "place_by_link",
    "remove",
    "remove_empty_folders",
    "remove_empty_tree",
    "retire",
    "root_device",
    "spot",
    "still_there",
    "sweep_temp_files",
    "unpark",
    "unpark_leftovers",
    "write_error",
]
