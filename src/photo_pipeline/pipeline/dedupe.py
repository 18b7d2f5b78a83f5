"""``dedupe``: reclaim the space of duplicates by moving every copy but one into a
quarantine under the library home, where an undo finds it and a purge deletes it.

The plan (``dedupe_plan.build_dedupe_plan``) keeps one file of each exact group (the
keeper policy, ``pipeline.keeper``) and, with ``near``, the assets the user kept in
near groups. The job holds the library lock, journals its whole plan
(``dedupe_entries``) before it touches a file, and then moves each copy to
``<home>/quarantine/<job id>/<source-relative path>`` with ``pipeline.transfer``:
the keeper must be there and hash to what the plan saw (else ``keeper_missing`` /
``keeper_changed``), the copy is re-hashed as it is placed (else
``content_changed``), and the original is removed only by ``retire``, which proves
the bytes removed are the ones placed. A link within one filesystem, else a copy
(fsynced, verified, mode and mtime kept). A crash at any instant is resumed from the
journal and the disk; every step is safe to repeat.

``dedupe_undo`` puts a job's quarantined files back where they were (same bytes,
mtime, mode); ``dedupe_purge`` deletes quarantined files older than N days for good,
each only while its keeper is still there. The catalogue follows every step: a
quarantined file's row is ``quarantined`` (not present), present again after an undo,
gone after a purge.

Front doors: ``plan_dedupe``, ``start_dedupe``, ``start_undo``, ``start_purge``,
``dedupe_report``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Row, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import dedupe_entries, jobs, sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobService, JobSnapshot, utc_now
from photo_pipeline.jobs.context import JobContext, LeaseLost
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.pipeline import parked, paths, transfer
from photo_pipeline.pipeline.catalog import PRESENT, Catalog
from photo_pipeline.pipeline.dedupe_plan import GroupPlan, build_dedupe_plan, bundle_stem, summary
from photo_pipeline.pipeline.organize import enqueue_library_job

JOB_TYPE = "dedupe"
UNDO_JOB_TYPE = "dedupe_undo"
PURGE_JOB_TYPE = "dedupe_purge"
QUARANTINE = "quarantine"  # below the library home
PLANNED, QUARANTINED, SKIPPED = "planned", "quarantined", "skipped"
RESTORED, PURGED = "restored", "purged"
_MAX_DAYS = 36_525


class DedupeError(PhotoPipelineError):
    """A request dedupe refuses: ``not_a_dedupe_job``, ``invalid_days``,
    ``quarantine_inside_source``."""

    code = "dedupe_refused"
    status = 422


def quarantine_folder(home: str | Path, job_id: str) -> str:
    """Where a dedupe job's copies go: ``<home>/quarantine/<job id>``."""
    return os.path.join(os.path.abspath(home), QUARANTINE, job_id)


# ── the plan ───────────────────────────────────────────────────────────────────
def plan_dedupe(
    session_factory: sessionmaker[Session], *, near: bool = False, limit: int | None = None
) -> dict[str, Any]:
    """The dry run as JSON-able data, touching nothing: ``summary`` (groups, files to
    quarantine, bytes reclaimed, keepers by reason) and ``groups`` (the first
    ``limit``, or all), each with its keeper, why it won and what moves."""
    plans = build_dedupe_plan(session_factory, near=near)
    shown = plans if limit is None else plans[:limit]
    return {
        "near": near,
        "summary": summary(plans),
        "groups": [plan.as_dict() for plan in shown],
        "truncated": len(shown) < len(plans),
    }


# ── starting jobs ──────────────────────────────────────────────────────────────
def start_dedupe(
    service: JobService,
    home: str | Path,
    *,
    near: bool = False,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    rejoin: bool = False,
    hard_links: bool = True,
) -> JobSnapshot:
    """Queue a ``dedupe`` job. Raises ``LibraryBusy`` (``lock_held``) while another
    job holds the library; ``rejoin`` returns an active job of this very request.
    ``hard_links=False`` copies into the quarantine even within one filesystem (for
    tests and odd mounts)."""
    params: dict[str, Any] = {"home": os.path.abspath(home), "near": near}
    _check_quarantine(service.session_factory, params["home"])
    if not hard_links:
        params["hard_links"] = False
    return enqueue_library_job(
        service, JOB_TYPE, params, idempotency_key, max_attempts, rejoin=rejoin
    )


def undo_key(dedupe_job_id: str) -> str:
    """The idempotency key of a dedupe job's undo: there is only ever one."""
    return f"dedupe-undo:{dedupe_job_id}"


def start_undo(service: JobService, dedupe_job_id: str, *, max_attempts: int = 10) -> JobSnapshot:
    """Queue the undo of a dedupe job (asking twice returns the same undo job)."""
    job = service.get(dedupe_job_id)
    if job is None or job["job_type"] != JOB_TYPE:
        raise DedupeError("not_a_dedupe_job", f"no dedupe job with id {dedupe_job_id!r}")
    params = {"dedupe_job_id": dedupe_job_id, "home": job["params"]["home"]}
    return enqueue_library_job(
        service, UNDO_JOB_TYPE, params, undo_key(dedupe_job_id), max_attempts
    )


def start_purge(
    service: JobService,
    home: str | Path,
    older_than_days: int,
    *,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
) -> JobSnapshot:
    """Queue a purge of files quarantined more than ``older_than_days`` days ago."""
    if type(older_than_days) is not int or not 0 <= older_than_days <= _MAX_DAYS:
        raise DedupeError(
            "invalid_days", f"--older-than-days must be 0..{_MAX_DAYS}, got {older_than_days!r}"
        )
    # The cutoff is fixed now, so a resumed purge deletes what was asked, no more.
    cutoff = utc_now() - timedelta(days=older_than_days)
    params = {
        "home": os.path.abspath(home),
        "older_than_days": older_than_days,
        "before": cutoff.isoformat(),
    }
    return enqueue_library_job(service, PURGE_JOB_TYPE, params, idempotency_key, max_attempts)


def _check_quarantine(session_factory: sessionmaker[Session], home: str) -> None:
    """A quarantine inside a source would be scanned as originals again."""
    quarantine = Path(os.path.realpath(os.path.join(home, QUARANTINE)))
    for root in Catalog(session_factory).source_paths():
        if quarantine.is_relative_to(root):
            raise DedupeError(
                "quarantine_inside_source",
                f"the quarantine {quarantine} is inside the source {root}: its copies would "
                "be catalogued as originals again; use a library home outside your photos",
            )


# ── the journal ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Entry:
    """One journal row, with the roots executing it needs."""

    id: int
    job_id: str
    seq: int
    kind: str
    file_id: int | None
    source_id: int
    source_root: str
    source_path: str
    quarantine_path: str
    content_hash: str
    size: int
    keeper_root: str
    keeper_path: str
    keeper_hash: str
    state: str

    @property
    def item_key(self) -> str:
        return f"{self.seq}:{paths.display(self.source_path)}"[:2000]

    def source(self) -> str:
        return os.path.join(self.source_root, paths.from_text(self.source_path))

    @property
    def bundle(self) -> tuple[int, str, str]:
        relative = paths.from_text(self.source_path)
        return (
            self.source_id,
            os.path.dirname(relative),
            bundle_stem(os.path.basename(relative)),
        )


Recorded = tuple[Entry, dict[str, Any], Any]
CatalogUpdate = Callable[[Session, list[Recorded]], None]


class Journal:
    """The entries of dedupe jobs. Writes are fenced like organize's: they land only
    while ``fence`` (the running job's id and fencing token) still holds the job."""

    def __init__(
        self, session_factory: sessionmaker[Session], fence: tuple[str, int] | None = None
    ) -> None:
        self._session_factory = session_factory
        self._fence = fence
        self._pending: list[Recorded] = []

    def load(self, *where: Any) -> list[Entry]:
        keeper_sources = sources.alias("keeper_sources")
        query = (
            select(
                dedupe_entries,
                sources.c.path.label("root"),
                keeper_sources.c.path.label("keeper_root"),
            )
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .join(keeper_sources, keeper_sources.c.id == dedupe_entries.c.keeper_source_id)
            .where(*where)
            .order_by(dedupe_entries.c.job_id, dedupe_entries.c.seq)
        )
        with read_session(self._session_factory) as session:
            return [
                Entry(
                    r.id,
                    r.job_id,
                    r.seq,
                    r.kind,
                    r.file_id,
                    r.source_id,
                    r.root,
                    r.source_path,
                    r.quarantine_path,
                    r.content_hash,
                    r.size,
                    r.keeper_root,
                    r.keeper_path,
                    r.keeper_hash,
                    r.state,
                )
                for r in session.execute(query)
            ]

    def of_job(self, job_id: str) -> list[Entry]:
        return self.load(dedupe_entries.c.job_id == job_id)

    @transactional
    def write_plan(self, job_id: str, plans: list[GroupPlan]) -> None:
        """All entries in one transaction: a journal is either whole or absent."""
        now = utc_now()
        with write_session(self._session_factory) as session:
            self._check_fence(session)
            if session.scalar(
                select(dedupe_entries.c.id).where(dedupe_entries.c.job_id == job_id).limit(1)
            ):
                return
            rows = [
                {
                    "job_id": job_id,
                    "seq": move.seq,
                    "group_key": move.group_key,
                    "kind": move.kind,
                    "reason": move.reason,
                    "file_id": move.member.file_id,
                    "source_id": move.member.source_id,
                    "source_path": move.member.path,
                    "quarantine_path": move.quarantine_path,
                    "content_hash": move.member.content_hash,
                    "size": move.member.size,
                    "keeper_source_id": move.keeper.source_id,
                    "keeper_path": move.keeper.path,
                    "keeper_hash": move.keeper.content_hash,
                    "state": PLANNED,
                    "updated_at": now,
                }
                for plan in plans
                for move in plan.moves
            ]
            for start in range(0, len(rows), 1000):
                session.execute(dedupe_entries.insert(), rows[start : start + 1000])

    def _check_fence(self, session: Session) -> None:
        if self._fence is None:
            return
        job_id, token = self._fence
        current = session.scalar(
            select(jobs.c.fencing_token).where(jobs.c.id == job_id).with_for_update()
        )
        if current != token:
            raise LeaseLost(f"job {job_id} is no longer held under fencing token {token}")

    def record(self, entry: Entry, values: dict[str, Any], extra: Any = None) -> None:
        """Buffer an entry's new column ``values`` (and ``extra`` for the catalogue);
        written by ``flush``, before the entry's item is reported done."""
        self._pending.append((entry, values, extra))

    def flush(self, catalog_update: CatalogUpdate) -> None:
        if not self._pending:
            return
        batch, self._pending = self._pending, []
        self._write(batch, catalog_update)

    @transactional
    def _write(self, batch: list[Recorded], catalog_update: CatalogUpdate) -> None:
        now = utc_now()
        with write_session(self._session_factory) as session:
            self._check_fence(session)
            catalog_update(session, batch)
            for entry, values, _ in batch:
                session.execute(
                    update(dedupe_entries)
                    .where(dedupe_entries.c.id == entry.id)
                    .values(updated_at=now, **values)
                )


# ── shared steps ───────────────────────────────────────────────────────────────
def _check_keeper(entry: Entry) -> None:
    """The keeper must be there and be what the plan saw: else the group is skipped."""
    where = os.path.join(entry.keeper_root, paths.display(entry.keeper_path))
    try:
        with transfer.spot(entry.keeper_root, paths.from_text(entry.keeper_path)) as place:
            found = transfer.hash_at(place)
    except ItemError as exc:
        if exc.code != "missing":
            raise
        found = None
    if found is None:
        raise ItemError("keeper_missing", f"{where}: the copy kept is gone; this one stays")
    if found[0] != entry.keeper_hash:
        raise ItemError(
            "keeper_changed", f"{where}: the copy kept changed since the plan; this one stays"
        )


def _remove_empty_folders(top: str) -> None:
    """Folders below ``top`` (and ``top``) left empty, deepest first."""
    if not os.path.isdir(top) or os.path.islink(top):
        return
    for folder, _, _ in sorted(os.walk(top), key=lambda w: len(w[0]), reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


def _put_back(entry: Entry, quarantine: str, ctx: JobContext, kind: str) -> os.stat_result | None:
    """Move a quarantined copy back to its path. Returns the restored file's stat, or
    None when this entry never reached the quarantine (nothing to put back)."""
    expected = entry.content_hash
    q_rel, source_rel = paths.from_text(entry.quarantine_path), paths.from_text(entry.source_path)
    names = transfer.PrivateNames(kind, ctx.job_id, entry.seq, ctx.fencing_token)
    with contextlib.ExitStack() as stack:
        try:
            held = stack.enter_context(transfer.spot(quarantine, q_rel))
        except ItemError as exc:
            if exc.code != "missing":
                raise
            return _already_back(entry)
        transfer.unpark_leftovers(held, names.prefix)  # parked by a run that died mid-remove
        there = transfer.hash_at(held)
        if there is None:
            return _already_back(entry)
        if there[0] != expected:
            raise ItemError(
                "quarantine_changed", f"{held.path}: changed in the quarantine; kept there"
            )
        source = stack.enter_context(transfer.spot(entry.source_root, source_rel, create=True))
        at_source = transfer.hash_at(source)
        seen = None
        if at_source is None:
            link = transfer.device(quarantine) == transfer.device_of_folder(source.path)
            _, seen = transfer.place(held, source, names.temp, expected, link=link)
        elif at_source[0] != expected:
            raise ItemError(
                "source_taken", f"{source.path}: another file now has this name; left alone"
            )
        transfer.retire(held, expected, seen, names.parking)
        return os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)


def _already_back(entry: Entry) -> os.stat_result | None:
    """Nothing in the quarantine: the copy is back in place already (a run that died
    after putting it back), was never moved, or is gone (purged or deleted by hand)."""
    try:
        with transfer.spot(entry.source_root, paths.from_text(entry.source_path)) as source:
            at_source = transfer.hash_at(source)
            if at_source is not None and at_source[0] == entry.content_hash:
                return os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)
    except ItemError as exc:
        if exc.code != "missing":
            raise
    if entry.state == PURGED:
        raise ItemError("purged", f"{entry.source()}: purged from the quarantine for good")
    if entry.state != QUARANTINED:
        return None  # never moved
    raise ItemError("missing", f"{entry.source()}: its quarantined copy is gone")


# ── the dedupe job ─────────────────────────────────────────────────────────────
@registry.handler(JOB_TYPE)
def dedupe(ctx: JobContext) -> None:
    parked.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    quarantine = quarantine_folder(ctx.params["home"], ctx.job_id)
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    entries = journal.of_job(ctx.job_id)
    if not entries:
        # First run: the whole plan is journalled before any file is touched.
        journal.write_plan(
            ctx.job_id, build_dedupe_plan(ctx.session_factory, near=ctx.params["near"])
        )
        entries = journal.of_job(ctx.job_id)
    for start in range(0, len(entries), 1000):
        ctx.add_items(e.item_key for e in entries[start : start + 1000])
    by_seq = {e.seq: e for e in entries}
    # Which entries are photos of a bundle: a sidecar moves only after all of them.
    photos_of: dict[tuple[int, str, str], list[int]] = {}
    for entry in entries:
        if entry.kind != "sidecar":
            photos_of.setdefault(entry.bundle, []).append(entry.seq)
    moved = {e.seq for e in entries if e.state == QUARANTINED}
    os.makedirs(quarantine, mode=0o700, exist_ok=True)
    folders = [
        os.path.dirname(os.path.join(quarantine, paths.from_text(e.quarantine_path)))
        for e in entries
    ]
    transfer.sweep_temp_files(folders, JOB_TYPE, ctx.job_id)
    q_device = transfer.device(quarantine) if ctx.params.get("hard_links", True) else None

    def write_journal() -> None:
        journal.flush(_catalogue_quarantined)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = by_seq[int(key.split(":", 1)[0])]
        if entry.state == QUARANTINED:
            ctx.succeed(key)  # done before a crash; only its item was not yet recorded
            continue
        try:
            try:
                if entry.kind == "sidecar" and not set(photos_of.get(entry.bundle, [])) <= moved:
                    raise ItemError("photo_kept", f"{entry.source()}: its photo stays; so does it")
                info = _quarantine_one(entry, quarantine, ctx, q_device)
            except OSError as exc:  # an I/O error on this file fails it, not the job
                raise transfer.write_error(exc, exc.filename or entry.source()) from exc
        except ItemError as exc:
            failure = {"state": SKIPPED, "error_code": exc.code, "error_message": exc.message}
            journal.record(entry, failure)
            ctx.fail(key, exc.code, exc.message)
            continue
        moved.add(entry.seq)
        done = {
            "state": QUARANTINED,
            "quarantined_at": utc_now(),
            "error_code": None,
            "error_message": None,
        }
        journal.record(entry, done, info)
        ctx.succeed(key)
    ctx.flush()
    transfer.sweep_temp_files(folders, JOB_TYPE, ctx.job_id)
    if not ctx.should_stop:
        _remove_empty_folders(quarantine)


def _quarantine_one(
    entry: Entry, quarantine: str, ctx: JobContext, q_device: int | None
) -> os.stat_result:
    """Move one copy into the quarantine; safe to run again after a crash at any point."""
    try:
        _check_keeper(entry)
    except ItemError:
        # A run that died after placing this copy: it goes back before the skip.
        _put_back(entry, quarantine, ctx, JOB_TYPE)
        raise
    source_rel, q_rel = paths.from_text(entry.source_path), paths.from_text(entry.quarantine_path)
    names = transfer.PrivateNames(JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token)
    with (
        transfer.spot(entry.source_root, source_rel) as source,
        transfer.spot(quarantine, q_rel, create=True) as held,
    ):
        # Parked by a run that died mid-remove (the original, or a withdrawn copy).
        transfer.unpark_leftovers(source, names.prefix)
        transfer.unpark_leftovers(held, names.prefix)
        there = transfer.hash_at(held)
        if there is not None and there[0] != entry.content_hash:
            raise ItemError("destination_taken", f"{held.path}: another file is there; kept it")
        seen = None  # placed by an earlier run: the original is checked by its bytes alone
        if there is None:
            link = q_device is not None and transfer.device(entry.source()) == q_device
            _, seen = transfer.place(source, held, names.temp, entry.content_hash, link=link)
        try:
            transfer.retire(source, entry.content_hash, seen, names.parking)
        except ItemError:
            _withdraw(held, entry, names.parking)  # the original stays: so no second copy
            raise
        return os.stat(held.name, dir_fd=held.fd, follow_symlinks=False)


def _withdraw(held: transfer.Spot, entry: Entry, parking: str) -> None:
    """Take back a copy placed in the quarantine whose original could not be removed
    (changed or in use), so that no file is both in place and quarantined. Only when
    that loses no bytes: another name of the same inode remains (a hard link), or the
    keeper holds these very bytes (an exact copy)."""
    try:
        info = os.stat(held.name, dir_fd=held.fd, follow_symlinks=False)
    except FileNotFoundError:
        return
    if info.st_nlink > 1:
        transfer.remove(held)
    elif entry.kind == "copy":
        with contextlib.suppress(ItemError):
            _check_keeper(entry)
            transfer.retire(held, entry.content_hash, None, parking)


def _catalogue_quarantined(session: Session, batch: list[Recorded]) -> None:
    ids = [
        entry.file_id
        for entry, values, _ in batch
        if values["state"] == QUARANTINED and entry.file_id is not None
    ]
    Catalog.record_quarantined(session, ids, utc_now())


# ── undo ───────────────────────────────────────────────────────────────────────
@registry.handler(UNDO_JOB_TYPE)
def undo(ctx: JobContext) -> None:
    parked.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    dedupe_id = ctx.params["dedupe_job_id"]
    quarantine = quarantine_folder(ctx.params["home"], dedupe_id)
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    # Newest first; entries not recorded quarantined are looked at too (a crash may
    # have placed them): each step looks at the disk before it acts.
    work = [e for e in reversed(journal.of_job(dedupe_id)) if e.state != SKIPPED]
    for start in range(0, len(work), 1000):
        ctx.add_items(e.item_key for e in work[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    transfer.sweep_temp_files(
        (os.path.dirname(e.source()) for e in work), UNDO_JOB_TYPE, ctx.job_id
    )

    def write_journal() -> None:
        journal.flush(_catalogue_restored)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = by_seq[int(key.split(":", 1)[0])]
        if entry.state == RESTORED:
            ctx.succeed(key)
            continue
        try:
            try:
                restored = _put_back(entry, quarantine, ctx, UNDO_JOB_TYPE)
            except OSError as exc:
                raise transfer.write_error(exc, exc.filename or entry.source()) from exc
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            continue
        journal.record(entry, {"state": RESTORED, "undo_job_id": ctx.job_id}, restored)
        ctx.succeed(key)
    ctx.flush()
    transfer.sweep_temp_files(
        (os.path.dirname(e.source()) for e in work), UNDO_JOB_TYPE, ctx.job_id
    )
    if not ctx.should_stop:
        _remove_empty_folders(quarantine)


def _catalogue_restored(session: Session, batch: list[Recorded]) -> None:
    rows = [
        {
            "file_id": entry.file_id,
            "state": PRESENT if entry.kind != "sidecar" else "failed",
            "size": info.st_size,
            "mtime_ns": info.st_mtime_ns,
            "inode": info.st_ino,
        }
        for entry, _, info in batch
        if info is not None and entry.file_id is not None
    ]
    Catalog.record_restored(session, rows, utc_now())


# ── purge ──────────────────────────────────────────────────────────────────────
@registry.handler(PURGE_JOB_TYPE)
def purge(ctx: JobContext) -> None:
    parked.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    home = ctx.params["home"]
    before = datetime.fromisoformat(ctx.params["before"])
    journal = Journal(ctx.session_factory, (ctx.job_id, ctx.fencing_token))
    entries = journal.load(
        dedupe_entries.c.state.in_([QUARANTINED, PURGED]),
        dedupe_entries.c.quarantined_at < before,
    )
    # Entries purged by this very job before a crash keep their items; others' stay.
    mine = _purged_by(ctx)
    work = [e for e in entries if e.state == QUARANTINED or e.id in mine]
    keys = {f"{e.id}:{paths.display(e.source_path)}"[:2000]: e for e in work}
    ctx.add_items(list(keys))

    def write_journal() -> None:
        journal.flush(_catalogue_purged)

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = keys[key]
        if entry.state == PURGED:
            ctx.succeed(key)
            continue
        quarantine = quarantine_folder(home, entry.job_id)
        try:
            _check_keeper(entry)  # never delete what may be the last copy
            try:
                with transfer.spot(quarantine, paths.from_text(entry.quarantine_path)) as held:
                    names = transfer.PrivateNames(
                        PURGE_JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token
                    )
                    transfer.unpark_leftovers(held, names.prefix)  # a run that died mid-remove
                    transfer.retire(held, entry.content_hash, None, names.parking)
            except ItemError as exc:
                if exc.code != "missing":
                    raise
            except OSError as exc:
                raise transfer.write_error(exc, exc.filename or quarantine) from exc
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            continue
        journal.record(entry, {"state": PURGED, "purge_job_id": ctx.job_id})
        ctx.succeed(key)
    ctx.flush()
    if not ctx.should_stop:
        for job_id in {e.job_id for e in work}:
            _remove_empty_folders(quarantine_folder(home, job_id))


def _purged_by(ctx: JobContext) -> set[int]:
    """Entries this purge job deleted already (before a crash)."""
    with read_session(ctx.session_factory) as session:
        return set(
            session.scalars(
                select(dedupe_entries.c.id).where(dedupe_entries.c.purge_job_id == ctx.job_id)
            )
        )


def _catalogue_purged(session: Session, batch: list[Recorded]) -> None:
    Catalog.record_purged(session, [e.file_id for e, _, _ in batch if e.file_id is not None])


# ── what a stopped job may have left ───────────────────────────────────────────
def _entries(session: Session, *where: Any) -> Iterator[Row[Any]]:
    return iter(
        session.execute(
            select(
                dedupe_entries.c.job_id,
                dedupe_entries.c.seq,
                dedupe_entries.c.source_path,
                dedupe_entries.c.quarantine_path,
                sources.c.path.label("root"),
            )
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .where(*where)
        )
    )


def _places(kind: str, home: str, row: Row[Any]) -> Iterator[parked.Place]:
    """An entry's original and its quarantined copy: either may have been parked
    (removed after placing the other) or had a temp copy beside it."""
    yield parked.Place(kind, row.root, paths.from_text(row.source_path), row.seq)
    quarantine = quarantine_folder(home, row.job_id)
    yield parked.Place(kind, quarantine, paths.from_text(row.quarantine_path), row.seq)


def _dedupe_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    unfinished = dedupe_entries.c.state.in_([PLANNED, SKIPPED])
    for row in _entries(session, dedupe_entries.c.job_id == job_id, unfinished):
        yield from _places(JOB_TYPE, params["home"], row)


def _undo_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    unfinished = dedupe_entries.c.state.in_([PLANNED, QUARANTINED, PURGED])
    for row in _entries(session, dedupe_entries.c.job_id == params["dedupe_job_id"], unfinished):
        yield from _places(UNDO_JOB_TYPE, params["home"], row)


def _purge_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    before = datetime.fromisoformat(params["before"])
    rows = _entries(
        session,
        dedupe_entries.c.state == QUARANTINED,
        dedupe_entries.c.quarantined_at < before,
    )
    for row in rows:
        held = paths.from_text(row.quarantine_path)
        quarantine = quarantine_folder(params["home"], row.job_id)
        yield parked.Place(PURGE_JOB_TYPE, quarantine, held, row.seq)


parked.register(JOB_TYPE, _dedupe_leftovers)
parked.register(UNDO_JOB_TYPE, _undo_leftovers)
parked.register(PURGE_JOB_TYPE, _purge_leftovers)


# ── reports ────────────────────────────────────────────────────────────────────
def dedupe_report(
    session_factory: sessionmaker[Session], job_id: str, *, limit: int = 100
) -> dict[str, Any]:
    """What a dedupe, undo or purge job did: entries per state, bytes quarantined (or
    reclaimed by a purge), and the first ``limit`` skipped entries with reasons."""
    with read_session(session_factory) as session:
        job_type = session.scalar(select(jobs.c.job_type).where(jobs.c.id == job_id))
        if job_type == PURGE_JOB_TYPE:
            count, reclaimed = session.execute(
                select(func.count(), func.coalesce(func.sum(dedupe_entries.c.size), 0)).where(
                    dedupe_entries.c.purge_job_id == job_id
                )
            ).one()
            return {
                "job_id": job_id,
                "purged": count,
                "bytes_reclaimed": int(reclaimed),
            }
        if job_type == UNDO_JOB_TYPE:
            restored = session.scalar(
                select(func.count()).where(dedupe_entries.c.undo_job_id == job_id)
            )
            return {"job_id": job_id, "restored": restored}
        rows = session.execute(
            select(dedupe_entries, sources.c.path.label("root"))
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .where(dedupe_entries.c.job_id == job_id)
            .order_by(dedupe_entries.c.seq)
        ).all()
    states: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    quarantined_bytes = 0
    for row in rows:
        states[row.state] = states.get(row.state, 0) + 1
        if row.state in (QUARANTINED, PURGED):
            quarantined_bytes += row.size
        if row.state == SKIPPED and len(problems) < limit:
            problems.append(
                {
                    "seq": row.seq,
                    "group": row.group_key,
                    "path": f"{row.root}/{paths.display(row.source_path)}",
                    "reason": row.error_code,
                    "message": row.error_message,
                }
            )
    return {
        "job_id": job_id,
        "entries": len(rows),
        "states": states,
        "bytes_quarantined": quarantined_bytes,
        "problems": problems,
    }


__all__ = [
    "JOB_TYPE",
    "PURGE_JOB_TYPE",
    "UNDO_JOB_TYPE",
    "DedupeError",
    "Journal",
    "dedupe_report",
    "plan_dedupe",
    "quarantine_folder",
    "start_dedupe",
    "start_purge",
    "start_undo",
    "undo_key",
]
