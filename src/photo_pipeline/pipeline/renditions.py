"""The rendition store: files under the library home, content-addressed, and their rows.

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
3. then the rows are committed (the fenced item write).

A crash before 3 loses the unfinished batch's renditions (its files are temp files,
swept later, or complete files that no row names yet); a name only ever holds a
complete file, and no row ever names a file that is not durably there.

For the API: :func:`rendition_file` gives the file of an asset's thumbnail or preview.
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
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, case, delete, func, select, union_all, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, renditions, sources
from photo_pipeline.jobs.service import Clock, utc_now
from photo_pipeline.pipeline.catalog import PRESENT
from photo_pipeline.pipeline.roots import PathOutsideRoots, real_path_inside

STORE = "renditions"
KINDS = ("thumbnail", "preview")
_TEMP_SUFFIX = ".tmp"
# In the store: one empty folder per process that stages (folders, not files: the
# store's files are renditions and their hidden temp files).
_STAGING = "staging"
_HOST = socket.gethostname().replace("~", "-")
_ABANDONED_TEMP_SECONDS = 3600.0
# media.render.FORMATS, without loading the decoders (the API serves these).
_MIME_TYPES = {"jpeg": "image/jpeg", "webp": "image/webp", "avif": "image/avif"}
PRIVATE_FILE_MODE = 0o600
PRIVATE_FOLDER_MODE = 0o700
_MARKER_CHUNK = 500  # asset ids per UPDATE of their renditions_fingerprint


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
    return host == _HOST and pid.isdigit() and not _alive(int(pid))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


# ── rows ───────────────────────────────────────────────────────────────────────
class Renditions:
    """Rows of the ``renditions`` table and the queries the render job needs."""

    def __init__(self, session_factory: sessionmaker[Session], *, clock: Clock = utc_now) -> None:
        self._session_factory = session_factory
        self._clock = clock

    def to_render(self, fingerprint: str, *, force: bool = False) -> list[dict[str, Any]]:
        """Assets with a present file whose renditions are missing or were made with
        other settings (all of them with ``force``): id, content hash and the absolute
        path of one present file (the lowest file id). The stale ones are those whose
        ``renditions_fingerprint`` is not this one: ranges of its index, empty when
        there is nothing to do, whatever the library's size."""
        present = select(files.c.asset_id, func.min(files.c.id).label("file_id")).where(
            files.c.state == PRESENT, files.c.asset_id.is_not(None)
        )
        if not force:
            marker = assets.c.renditions_fingerprint
            # Three index ranges (not "IS DISTINCT FROM", which no index serves); the
            # files of the assets they give are then looked up by the files index.
            stale = union_all(
                select(assets.c.id).where(marker.is_(None)),
                select(assets.c.id).where(marker < fingerprint),
                select(assets.c.id).where(marker > fingerprint),
            )
            present = present.where(files.c.asset_id.in_(stale))
        first_file = present.group_by(files.c.asset_id).subquery()
        query = (
            select(
                assets.c.id,
                assets.c.content_hash,
                files.c.path,
                sources.c.path.label("source_path"),
            )
            .join(first_file, first_file.c.asset_id == assets.c.id)
            .join(files, files.c.id == first_file.c.file_id)
            .join(sources, sources.c.id == files.c.source_id)
            .order_by(assets.c.id)
        )
        with read_session(self._session_factory) as session:
            return [dict(row._mapping) for row in session.execute(query)]

    @transactional
    def record(self, outcomes: list[RenderOutcome], fingerprint: str) -> list[str]:
        """Record rendered assets in one transaction (re-recording changes nothing);
        returns the relative paths of files that no row points at any more."""
        with write_session(self._session_factory) as session:
            return self.record_in(session, outcomes, fingerprint)

    def record_in(
        self, session: Session, outcomes: list[RenderOutcome], fingerprint: str
    ) -> list[str]:
        """``record`` inside the caller's transaction (a render's fenced item write)."""
        done = [o for o in outcomes if o.error is None and o.renditions]
        if not done:
            return []
        now = self._clock()
        orphans: list[str] = []
        ids = sorted({o.asset_id for o in done})
        # Cleared first: the asset rows stay locked until the commit, so two writers
        # of one asset's renditions take turns, and the second sets the marker from
        # what the first committed.
        self._set_marker(session, ids, None)
        before = {
            (row.asset_id, row.kind): row.path
            for row in session.execute(
                select(renditions.c.asset_id, renditions.c.kind, renditions.c.path).where(
                    renditions.c.asset_id.in_(ids)
                )
            )
        }
        for outcome in done:
            for rendition in outcome.renditions:
                self._upsert(session, outcome, rendition, fingerprint, now)
                old = before.get((outcome.asset_id, rendition.kind))
                if old is not None and old != rendition.path:
                    orphans.append(old)  # another format: the old file goes
            if outcome.phash is not None:
                session.execute(
                    update(assets)
                    .where(assets.c.id == outcome.asset_id)
                    .values(phash=outcome.phash, updated_at=now)
                )
        self._set_marker(session, ids, fingerprint)
        return orphans

    @staticmethod
    def _set_marker(session: Session, asset_ids: list[int], fingerprint: str | None) -> None:
        """``assets.renditions_fingerprint`` of these assets: ``fingerprint`` where
        every kind's rendition was made with it, else NULL (None: NULL for all)."""
        if fingerprint is None:
            value: Any = None
        else:
            current = (
                select(func.count())
                .where(
                    renditions.c.asset_id == assets.c.id,
                    renditions.c.fingerprint == fingerprint,
                    renditions.c.kind.in_(KINDS),
                )
                .scalar_subquery()
            )
            value = case((current == len(KINDS), fingerprint), else_=None)
        for start in range(0, len(asset_ids), _MARKER_CHUNK):
            chunk = asset_ids[start : start + _MARKER_CHUNK]
            session.execute(
                update(assets).where(assets.c.id.in_(chunk)).values(renditions_fingerprint=value)
            )

    def _upsert(
        self,
        session: Session,
        outcome: RenderOutcome,
        rendition: StoredRendition,
        fingerprint: str,
        now: datetime,
    ) -> None:
        values = {
            "path": rendition.path,
            "format": rendition.format,
            "width": rendition.width,
            "height": rendition.height,
            "bytes": rendition.bytes,
            "fingerprint": fingerprint,
            "warning": outcome.warning,
            "created_at": now,
        }
        session.execute(
            insert_for(session, renditions)
            .values(asset_id=outcome.asset_id, kind=rendition.kind, **values)
            .on_conflict_do_update(index_elements=["asset_id", "kind"], set_=values)
        )

    def of_asset(self, asset_id: int) -> dict[str, dict[str, Any]]:
        """The renditions of one asset by kind (empty when none)."""
        query = select(renditions).where(renditions.c.asset_id == asset_id)
        with read_session(self._session_factory) as session:
            return {row.kind: dict(row._mapping) for row in session.execute(query)}

    def all(self) -> list[dict[str, Any]]:
        with read_session(self._session_factory) as session:
            query = select(renditions).order_by(renditions.c.asset_id, renditions.c.kind)
            return [dict(row._mapping) for row in session.execute(query)]

    @transactional
    def forget(self, asset_ids: list[int]) -> None:
        with write_session(self._session_factory) as session:
            session.execute(delete(renditions).where(renditions.c.asset_id.in_(asset_ids)))
            self._set_marker(session, sorted(set(asset_ids)), None)


def rendition_file(
    session_factory: sessionmaker[Session], home: Path, asset_id: int, kind: str
) -> dict[str, Any] | None:
    """The rendition ``kind`` ("thumbnail" or "preview") of an asset, for serving:
    ``{"path": Path, "mime": str, "width", "height", "bytes", "fingerprint"}`` (the
    fingerprint with the content hash makes a strong ETag), or None when the asset
    has no such rendition (yet) or its file is gone."""
    if kind not in KINDS:
        return None
    query = (
        select(renditions, assets.c.content_hash)
        .join(assets, assets.c.id == renditions.c.asset_id)
        .where(and_(renditions.c.asset_id == asset_id, renditions.c.kind == kind))
    )
    with read_session(session_factory) as session:
        row = session.execute(query).one_or_none()
    if row is None:
        return None
    # Re-checked at every request: a file of the store swapped for a symlink must not
    # serve what it points at.
    store = os.path.join(os.path.realpath(home), STORE)
    try:
        path = Path(real_path_inside(home / row.path, [store], "rendition"))
    except PathOutsideRoots:
        return None
    if not path.is_file():
        return None
    return {
        "path": path,
        "mime": _MIME_TYPES.get(row.format, "image/jpeg"),
        "width": row.width,
        "height": row.height,
        "bytes": row.bytes,
        "fingerprint": row.fingerprint,
        "content_hash": row.content_hash,
    }
