"""An upload's bytes on disk: a partial file, named by the upload's id, in the hidden
folder of the uploads root, and its landing under the name the client gave.

The partial's size is the upload's offset: bytes are appended in order and fsynced
before an offset is reported as received, so a resume never asks for less than is
there nor skips what is not. One request writes a partial at a time (``flock``; a
second gets ``upload_busy`` and the client retries). A whole upload lands by
``os.link`` into the device's folder (created through ``pipeline.files.spots``: no
symlink followed), its mtime already set: the name appears complete or not at all,
and a name that is taken is never replaced (``IMG_1 (2).jpg``). Landing again after a
crash finds its own inode under the name it took and takes no second one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.pipeline.files import spots
from photo_pipeline.pipeline.uploads.names import with_suffix
from photo_pipeline.pipeline.uploads.settings import UploadSettings

if TYPE_CHECKING:
    from photo_pipeline.pipeline.uploads.ledger import Upload


class DiskFull(PhotoPipelineError):
    code = "disk_full"
    status = 507


class UploadBusy(PhotoPipelineError):
    """Another request is writing this upload (a resume while the dropped request
    has not ended yet): try again shortly."""

    code = "upload_busy"
    status = 423


class UploadsUnwritable(PhotoPipelineError):
    code = "uploads_unwritable"
    status = 503


def _error(exc: OSError, what: str) -> PhotoPipelineError:
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return DiskFull("disk_full", f"no space left for uploads on the disk of {what}")
    return UploadsUnwritable("uploads_unwritable", f"{what}: {exc.strerror}")


@contextlib.contextmanager
def _partials(settings: UploadSettings, *, create: bool = True) -> Iterator[int]:
    try:
        fd = spots.open_root(str(settings.partials), create=create, mode=0o700)
    except ItemError as exc:
        if exc.code == "disk_full":
            raise DiskFull("disk_full", exc.message) from None
        raise UploadsUnwritable("uploads_unwritable", exc.message) from None
    try:
        yield fd
    finally:
        os.close(fd)


def free_bytes(settings: UploadSettings) -> int:
    """Bytes the uploads' filesystem has free for an unprivileged writer."""
    with _partials(settings) as fd:
        info = os.fstatvfs(fd)
    return info.f_bavail * info.f_frsize


def create(settings: UploadSettings, upload_id: str) -> None:
    """A new, empty partial. Not fsynced: nothing of it was acknowledged yet, and the
    first fsync of its bytes (``Writer.sync``) commits its creation too. A partial lost
    in a crash before that answers 404, and the client starts the upload again."""
    with _partials(settings) as folder:
        try:
            fd = os.open(
                upload_id, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644, dir_fd=folder
            )
            os.close(fd)
        except OSError as exc:
            raise _error(exc, str(settings.partials)) from exc


def size(settings: UploadSettings, upload_id: str) -> int | None:
    """The partial's size (the upload's offset), or None when it is gone."""
    with _partials(settings) as folder:
        try:
            return os.stat(upload_id, dir_fd=folder, follow_symlinks=False).st_size
        except FileNotFoundError:
            return None


def remove(settings: UploadSettings, upload_id: str) -> None:
    """Remove a partial. Not made durable: one that comes back after a crash belongs
    to a finished or forgotten upload, and the sweep removes it again."""
    with _partials(settings) as folder, contextlib.suppress(FileNotFoundError):
        os.unlink(upload_id, dir_fd=folder)


def ids(settings: UploadSettings) -> list[str]:
    """Every partial's upload id (none before the first upload made their folder)."""
    if not settings.partials.is_dir():
        return []
    with _partials(settings, create=False) as folder:
        return [name for name in os.listdir(folder) if name.isalnum()]


class Writer:
    """A partial opened for appending, held alone (``flock``) until closed."""

    def __init__(self, settings: UploadSettings, upload_id: str) -> None:
        self.where = str(settings.partials / upload_id)
        with _partials(settings) as folder:
            try:
                self.fd = os.open(
                    upload_id, os.O_WRONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=folder
                )
            except FileNotFoundError:
                raise
            except OSError as exc:
                raise _error(exc, self.where) from exc
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(self.fd)
            raise UploadBusy(
                "upload_busy", "another request is sending this upload; retry shortly"
            ) from None
        self.offset = os.fstat(self.fd).st_size
        self.landed: Upload | None = None  # set by whoever lands it while holding it

    def write(self, data: bytes | bytearray | memoryview) -> None:
        view = memoryview(data)
        try:
            while view:
                written = os.pwrite(self.fd, view, self.offset)
                self.offset += written
                view = view[written:]
        except OSError as exc:
            raise _error(exc, self.where) from exc

    def sync(self, mtime_ns: int | None = None) -> None:
        """Make what was written durable; with ``mtime_ns`` (the last bytes are in),
        the file's mtime set first, so that one fsync covers both."""
        try:
            if mtime_ns is not None:
                os.utime(self.fd, ns=(os.fstat(self.fd).st_atime_ns, mtime_ns))
            os.fsync(self.fd)
        except OSError as exc:
            raise _error(exc, self.where) from exc

    def close(self) -> None:
        os.close(self.fd)  # and the lock with it


def land(
    settings: UploadSettings, upload_id: str, device: str, name: str, mtime_ns: int | None
) -> str:
    """Give the whole partial its name in ``device``'s folder of the uploads root,
    with ``mtime_ns`` as its mtime (set, and fsynced with the last bytes, by
    ``Writer.sync``); returns the path it landed at, relative to the root, once the
    folder is fsynced. The partial keeps its own name until the caller removes it."""
    with _partials(settings) as folder:
        try:
            fd = os.open(upload_id, os.O_RDONLY | os.O_CLOEXEC | os.O_NOFOLLOW, dir_fd=folder)
        except OSError as exc:
            raise _error(exc, str(settings.partials / upload_id)) from exc
        try:
            partial = os.fstat(fd)
            if mtime_ns is not None and partial.st_mtime_ns != mtime_ns:
                os.utime(fd, ns=(partial.st_atime_ns, mtime_ns))  # a write after the sync
                os.fsync(fd)
        except OSError as exc:
            raise _error(exc, str(settings.partials / upload_id)) from exc
        finally:
            os.close(fd)
        try:
            destination = spots.open_folder(str(settings.root), device, create=True)
        except ItemError as exc:
            if exc.code == "disk_full":
                raise DiskFull("disk_full", exc.message) from None
            raise UploadsUnwritable("uploads_unwritable", exc.message) from None
        try:
            landed = _link_free_name(folder, upload_id, destination, name, partial)
            os.fsync(destination)
        except OSError as exc:
            raise _error(exc, str(settings.root / device)) from exc
        finally:
            os.close(destination)
    return os.path.join(device, landed)


def _link_free_name(
    folder: int, upload_id: str, destination: int, name: str, partial: os.stat_result
) -> str:
    """Link the partial under ``name`` or its first free variant; a variant that is
    the partial's own inode already (linked before a crash) is the one."""
    for n in range(1, 10_000):
        candidate = name if n == 1 else with_suffix(name, n)
        try:
            os.link(upload_id, candidate, src_dir_fd=folder, dst_dir_fd=destination)
            return candidate
        except FileExistsError:
            try:
                there = os.stat(candidate, dir_fd=destination, follow_symlinks=False)
            except FileNotFoundError:
                continue  # removed meanwhile: the next round may take it
            if (there.st_dev, there.st_ino) == (partial.st_dev, partial.st_ino):
                return candidate
    raise UploadsUnwritable("uploads_unwritable", f"no free name left for {name}")
