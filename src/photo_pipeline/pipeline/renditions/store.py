"""The rendition store's files: under the library home, content-addressed.

A rendition of the asset with content hash ``h`` lives at
``<home>/renditions/<h[:2]>/<h>-<kind>.<ext>``: the same content is rendered once,
whatever its paths.

Files reach their names durably, a batch at a time, and before any row names them:

1. :func:`stage` (in the item, where the photo was rendered) writes each file to a temp
   file beside its name, without fsync;
2. :func:`publish` (in the worker, for a batch of items about to be reported) fsyncs
   every temp file of the batch at once (concurrent fsyncs share the filesystem's
   journal commits: 100 files cost about what 4 cost one by one), renames each to its
   name, and fsyncs each folder once;
3. then the rows are committed (the fenced item write; ``pipeline.renditions.rows``).

A crash before 3 loses the unfinished batch's renditions (its files are temp files,
swept later, or complete files that no row names yet); a name only ever holds a
complete file, and no row ever names a file that is not durably there.
"""

from __future__ import annotations

import contextlib
import os
import socket
import time
import uuid
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from photo_pipeline.pipeline.files.roots import PathOutsideRoots, real_path_inside
from photo_pipeline.pipeline.library import PRIVATE_FILE_MODE, PRIVATE_FOLDER_MODE
from photo_pipeline.pipeline.library.home import STORE

_TEMP_SUFFIX = ".tmp"
# In the store: one empty folder per process that stages (folders, not files: the
# store's files are renditions and their hidden temp files).
_STAGING = "staging"
_HOST = socket.gethostname().replace("~", "-")
_ABANDONED_TEMP_SECONDS = 3600.0


@dataclass(frozen=True)
class StoredRendition:
    """A rendition written to the store, to be recorded."""

    kind: str
    path: str  # relative to the library home
    format: str
    width: int
    height: int
    bytes: int


@dataclass(frozen=True)
class StagedFile:
    """A rendition written to a temp file beside its name, not yet durable."""

    temp: str  # absolute path
    relative: str  # its name, relative to the library home


@dataclass(frozen=True)
class RenderOutcome:
    """What rendering one asset did (made in a pool process, recorded here)."""

    asset_id: int
    renditions: tuple[StoredRendition, ...] = ()
    phash: str | None = None
    warning: str | None = None
    error: tuple[str, str] | None = None
    staged: tuple[StagedFile, ...] = ()  # its files until they are published


# ── files ──────────────────────────────────────────────────────────────────────
def relative_path(content_hash: str, kind: str, extension: str) -> str:
    """Where a rendition lives, relative to the library home."""
    return f"{STORE}/{content_hash[:2]}/{content_hash}-{kind}.{extension}"


def stage(home: Path, contents: dict[str, bytes]) -> tuple[StagedFile, ...]:
    """Write each ``relative path -> data`` under ``home`` to a temp file in the
    folder of its name (not yet durable, not yet under its name: :func:`publish`).
    Raises OSError (a full disk, say), having removed what it wrote."""
    staged: list[StagedFile] = []
    if contents:
        _mark_staging(home)
    try:
        for relative, data in contents.items():
            target = home / relative
            make_private_folders(home, target.parent)
            store_path(home, relative)  # never written through a folder linked elsewhere
            # host and pid in the name tell a later sweep whose leftover a temp file is
            temp = target.with_name(
                f".{target.name}~{_HOST}~{os.getpid()}~{uuid.uuid4().hex[:8]}{_TEMP_SUFFIX}"
            )
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
            # Owner-only (less if the umask says so): renditions show what the photos show.
            fd = os.open(temp, flags, PRIVATE_FILE_MODE)
            staged.append(StagedFile(str(temp), relative))
            with os.fdopen(fd, "wb") as out:
                out.write(data)
    except BaseException:
        discard(staged)
        raise
    return tuple(staged)


def discard(staged: Iterable[StagedFile]) -> None:
    """Remove temp files that will not be published."""
    for file in staged:
        Path(file.temp).unlink(missing_ok=True)


def publish(home: Path, outcomes: list[RenderOutcome]) -> list[RenderOutcome]:
    """Make the staged files of a batch of outcomes durable under their names: fsync
    them all (concurrently), rename each to its name, fsync each folder once. Returns
    the outcomes to record: one whose files could not be published (an I/O error, a
    folder swapped for a symlink) comes back without renditions and with a warning,
    so it gets no row and a later render makes it again."""
    failed = _fsync_all(file.temp for outcome in outcomes for file in outcome.staged)
    kept: list[RenderOutcome] = []
    for outcome in outcomes:
        try:
            for file in outcome.staged:
                if file.temp in failed:
                    raise failed[file.temp]
                store_path(home, file.relative)  # checked again at the moment of use
                os.replace(file.temp, home / file.relative)
        except (OSError, PathOutsideRoots) as exc:
            discard(outcome.staged)
            kept.append(_unstored(outcome, exc))
            continue
        kept.append(outcome)
    # The renames themselves, before any row names their files.
    folders = _fsync_all({os.path.dirname(f.temp) for outcome in kept for f in outcome.staged})
    return [
        _unstored(outcome, error)
        if (error := next((folders[d] for d in _folders(outcome) if d in folders), None))
        else outcome
        for outcome in kept
    ]


def _folders(outcome: RenderOutcome) -> set[str]:
    return {os.path.dirname(file.temp) for file in outcome.staged}


def _unstored(outcome: RenderOutcome, exc: OSError | PathOutsideRoots) -> RenderOutcome:
    detail = exc.detail if isinstance(exc, PathOutsideRoots) else str(exc)
    return replace(outcome, renditions=(), staged=(), warning=f"renditions not stored: {detail}")


_FSYNC_THREADS = 16


def _fsync_all(paths: Iterable[str]) -> dict[str, OSError]:
    """fsync files or folders, many at a time (the filesystem groups the journal
    commits of concurrent fsyncs: ext4's jbd2, XFS's log); returns those that failed."""
    todo = list(paths)
    failed: dict[str, OSError] = {}
    if not todo:
        return failed
    with ThreadPoolExecutor(min(_FSYNC_THREADS, len(todo)), thread_name_prefix="fsync") as pool:
        for path, error in zip(todo, pool.map(_fsync, todo), strict=True):
            if error is not None:
                failed[path] = error
    return failed


def _fsync(path: str) -> OSError | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        return exc
    return None


def remove_files(home: Path, relatives: Iterable[str]) -> list[str]:
    """Remove files of the store that no row names any more (renditions replaced by
    another format's, once that is committed); returns why any was left alone."""
    refused = []
    for relative in relatives:
        try:
            store_path(home, relative).unlink(missing_ok=True)
        except PathOutsideRoots as exc:
            refused.append(exc.detail)
    return refused


def store_path(home: Path, relative: str) -> Path:
    """``home / relative``, refused (:class:`PathOutsideRoots`) when its folder really
    lies outside the store: a folder of it swapped for a symlink must not lead a
    write or a delete elsewhere. Checked at the moment of use."""
    store = os.path.join(os.path.realpath(home), STORE)
    path = home / relative
    real_path_inside(path.parent, [store], "rendition folder")
    return path


def make_private_folders(home: Path, folder: Path) -> None:
    """Create ``folder`` and its missing parents up to ``home``, owner-only."""
    home.mkdir(mode=PRIVATE_FOLDER_MODE, parents=True, exist_ok=True)
    missing = []
    while folder != home and not folder.is_dir():
        missing.append(folder)
        folder = folder.parent
    for each in reversed(missing):
        each.mkdir(mode=PRIVATE_FOLDER_MODE, exist_ok=True)


def _mark_staging(home: Path) -> None:
    """Touch this process's staging marker (``<store>/staging/<host>~<pid>/``): its
    mtime says when the process last staged, so that a sweep reads the store only
    when a process that staged is gone or silent for an hour."""
    marker = home / STORE / _STAGING / f"{_HOST}~{os.getpid()}"
    make_private_folders(home, marker)
    store_path(home, f"{STORE}/{_STAGING}/{marker.name}")  # not a folder linked elsewhere
    try:
        os.utime(marker, follow_symlinks=False)
    except FileNotFoundError:  # a sweep took it for abandoned (an hour silent) just now
        make_private_folders(home, marker)


def sweep_temp_files(home: Path, *, now: float | None = None) -> int:
    """Remove temp files that nobody will finish: this host's whose process is gone,
    and any older than an hour. Returns how many were removed. Every folder of the
    store is read only when a staging marker is abandoned (by the same rule), or when
    there are no markers yet (a store staged into before them): a render with nothing
    to do does not list a million renditions. (A live process's temp files older
    than an hour wait until it is gone or an hour silent.)"""
    root = home / STORE
    if not root.is_dir():
        return 0
    staging = root / _STAGING
    markers = [m.path for m in os.scandir(staging)] if staging.is_dir() else None
    abandoned = [m for m in markers or [] if _abandoned(m, *_owner(os.path.basename(m)), now)]
    if markers is not None and not abandoned:
        return 0
    removed = 0
    for folder in os.scandir(root):
        if not folder.is_dir(follow_symlinks=False):
            continue
        for entry in os.scandir(folder.path):
            if not (entry.name.startswith(".") and entry.name.endswith(_TEMP_SUFFIX)):
                continue
            parts = entry.name[: -len(_TEMP_SUFFIX)].split("~")
            owner = (parts[-3], parts[-2]) if len(parts) >= 4 else ("", "")
            if _abandoned(entry.path, *owner, now):
                Path(entry.path).unlink(missing_ok=True)
                removed += 1
    for marker in abandoned:
        if _abandoned(marker, *_owner(os.path.basename(marker)), now):  # not touched since
            with contextlib.suppress(OSError):  # gone already, or not an empty folder
                os.rmdir(marker)
    make_private_folders(home, staging)  # markers tell from now on
    return removed


def _owner(marker_name: str) -> tuple[str, str]:
    host, _, pid = marker_name.rpartition("~")
    return host, pid


def _abandoned(path: str, host: str, pid: str, now: float | None) -> bool:
    """A temp file or marker of ``host``'s process ``pid``: older than an hour, or
    this host's and its process gone."""
    try:
        age = (now if now is not None else time.time()) - os.stat(path).st_mtime
    except FileNotFoundError:
        return False  # renamed or removed meanwhile
    if age > _ABANDONED_TEMP_SECONDS:
        return True
    return host == _HOST and pid.isascii() and pid.isdigit() and not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
