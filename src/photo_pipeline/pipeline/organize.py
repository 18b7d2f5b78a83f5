"""``organize``: copy or move originals into a destination laid out by a template.

The plan is a pure function of catalogue rows, the template and what already lies in
the destination (``organize_plan.build_plan``); ``plan_organize`` serves it as JSON-able dicts (the
CLI's ``--dry-run --json`` and the API print the same thing). The ``organize`` job
holds the library lock, writes its whole plan into a journal (``organize_entries``)
before it touches a file, and then places each file with ``pipeline.transfer``
(temp file, fsync, hash check, link into place, never over an existing name). A
crash at any instant is resumed by looking at the disk: an entry is re-run until its
journal row says done, and every step is safe to repeat. ``organize.undo`` reverses
a job from its journal.

Front doors: ``plan_organize``, ``start_organize``, ``start_undo``, ``organize_report``.
"""

from __future__ import annotations

import contextlib
import os
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Row, bindparam, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import jobs, organize_entries, sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobService, JobSnapshot, LockHeld, utc_now
from photo_pipeline.jobs.context import JobContext, LeaseLost, RowWriter
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.jobs.states import WorkerState
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline import parked, paths, transfer
from photo_pipeline.pipeline.catalog import Catalog
from photo_pipeline.pipeline.organize_plan import (
    Candidate,
    DestinationState,
    PlanEntry,
    build_plan,
    catalogue_candidates,
)
from photo_pipeline.pipeline.template import DEFAULT_TEMPLATE, inside, parse

JOB_TYPE = "organize"
UNDO_JOB_TYPE = "organize.undo"
# Organize, its undo and verify all take this one lock: while files move, nothing else
# may move them or judge them missing.
LIBRARY_LOCK = "library"
PLANNED, DONE, FAILED, SKIPPED, UNDONE = "planned", "done", "failed", "skipped", "undone"
# Files organize works on at once, and how many it queues ahead of the journal, so
# that the threads keep working while a batch of results is committed (measured with
# bench/organize.py).
_THREADS = 4
_AHEAD = 128


class OrganizeError(PhotoPipelineError):
    """A request ``organize`` refuses: ``destination_not_a_folder``,
    ``destination_not_writable``, ``destination_inside_source``,
    ``destination_contains_source``, ``not_an_organize_job``."""

    code = "organize_refused"
    status = 422


class LibraryBusy(LockHeld):
    """Another job holds the library lock; ``blockers`` names it (id, type, state)."""

    def __init__(self, detail: str, blockers: list[dict[str, Any]]) -> None:
        super().__init__(detail, blocking_jobs=[b["id"] for b in blockers])
        self.blockers = blockers


def check_destination(session_factory: sessionmaker[Session], destination: Path | str) -> str:
    """The destination as an absolute path, refused when it is a file, not writable,
    or overlaps a registered source (other than itself)."""
    target = Path(destination).expanduser().resolve()
    if target.exists() and not target.is_dir():
        raise OrganizeError("destination_not_a_folder", f"{target} exists and is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OrganizeError("destination_not_a_folder", f"{existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OrganizeError("destination_not_writable", f"{existing} is not writable")
    with read_session(session_factory) as session:
        roots = [Path(p) for p in session.scalars(select(sources.c.path))]
    for root in roots:
        if root == target:
            continue
        if target.is_relative_to(root):
            raise OrganizeError(
                "destination_inside_source",
                f"{target} is inside the source {root}: organizing would move files "
                "within a folder that is scanned as originals",
            )
        if root.is_relative_to(target):
            raise OrganizeError(
                "destination_contains_source",
                f"the source {root} is inside {target}: choose a destination outside it",
            )
    return str(target)


def plan_organize(
    session_factory: sessionmaker[Session],
    destination: Path | str,
    template: str = DEFAULT_TEMPLATE,
    *,
    move: bool = False,
    limit: int | None = None,
    keep_duplicates: bool = False,
) -> dict[str, Any]:
    """The dry-run plan as JSON-able data, touching nothing: ``summary`` (counts per
    action and reason, bytes to write) and ``entries`` (the first ``limit``, or all).
    Raises ``TemplateError`` / ``OrganizeError`` for bad input."""
    parsed = parse(template)
    root = check_destination(session_factory, destination)
    plan = build_plan(
        catalogue_candidates(session_factory, root),
        parsed,
        move=move,
        existing=DestinationState(root),
        keep_duplicates=keep_duplicates,
    )
    for entry in plan:
        inside(root, paths.from_text(entry.dest_path))  # last line of defence
    shown = plan if limit is None else plan[:limit]
    return {
        "destination": root,
        "template": parsed.text,
        "mode": "move" if move else "copy",
        "summary": _summary(plan),
        "entries": [entry.as_dict(root) for entry in shown],
        "truncated": len(shown) < len(plan),
    }


def _summary(plan: list[PlanEntry]) -> dict[str, Any]:
    summary: dict[str, Any] = {"files": len(plan), "bytes": 0, "actions": {}, "reasons": {}}
    for entry in plan:
        summary["actions"][entry.action] = summary["actions"].get(entry.action, 0) + 1
        if entry.reason:
            summary["reasons"][entry.reason] = summary["reasons"].get(entry.reason, 0) + 1
        if entry.action != "skip":
            summary["bytes"] += entry.candidate.size
    return summary


# ── starting jobs ──────────────────────────────────────────────────────────────
def start_organize(
    service: JobService,
    destination: Path | str,
    template: str = DEFAULT_TEMPLATE,
    *,
    move: bool = False,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    hard_links: bool = True,
    rejoin: bool = False,
    keep_duplicates: bool = False,
) -> JobSnapshot:
    """Queue an ``organize`` job (after validating the template and destination).
    Raises ``LibraryBusy`` (``lock_held``, naming the job) while another organize,
    undo or verify is active. ``hard_links=False`` makes a move within one
    filesystem copy and delete instead of linking (slower; for tests and odd mounts).
    ``rejoin``: when an active job of this very request holds the lock (its command
    was killed, say), return that job instead of refusing."""
    parsed = parse(template)
    root = check_destination(service.session_factory, destination)
    params = {"destination": root, "template": parsed.text, "move": move, "hard_links": hard_links}
    if keep_duplicates:  # only when asked: the params of earlier requests stay the same
        params["keep_duplicates"] = True
    return enqueue_library_job(
        service, JOB_TYPE, params, idempotency_key, max_attempts, rejoin=rejoin
    )


def undo_key(organize_job_id: str) -> str:
    """The idempotency key of an organize job's undo: there is only ever one."""
    return f"organize-undo:{organize_job_id}"


def start_undo(service: JobService, organize_job_id: str, *, max_attempts: int = 10) -> JobSnapshot:
    """Queue the undo of a finished organize job: moved files go back, copies are
    removed. Asking twice returns the same undo job."""
    job = service.get(organize_job_id)
    if job is None or job["job_type"] != JOB_TYPE:
        raise OrganizeError("not_an_organize_job", f"no organize job with id {organize_job_id!r}")
    params = {"organize_job_id": organize_job_id, "destination": job["params"]["destination"]}
    key = undo_key(organize_job_id)
    return enqueue_library_job(service, UNDO_JOB_TYPE, params, key, max_attempts)


def enqueue_library_job(
    service: JobService,
    job_type: str,
    params: dict[str, Any],
    idempotency_key: str | None,
    max_attempts: int,
    *,
    rejoin: bool = False,
) -> JobSnapshot:
    """Queue a job holding the library lock. While another holds it: with ``rejoin``,
    the active job of this very request (its command was killed and run again), else
    ``LibraryBusy`` naming the holders. Organize, dedupe and their undos use it."""
    try:
        return service.enqueue(
            job_type,
            lock=LIBRARY_LOCK,
            params=params,
            idempotency_key=idempotency_key,
            max_attempts=max_attempts,
        )
    except LockHeld as exc:
        same = library_job_of(service, job_type, params) if rejoin else None
        if same is not None:
            return same
        raise library_busy(service) from exc


def library_job_of(
    service: JobService, job_type: str, params: dict[str, Any]
) -> JobSnapshot | None:
    """The active job holding the library lock for this very request (same type and
    params), e.g. one whose ``--wait`` command was killed: running the command again
    rejoins it, as ``import`` does, rather than being refused by it."""
    for holder in service.blockers(LIBRARY_LOCK):
        job = service.get(holder["id"])
        if job is not None and job["job_type"] == job_type and job["params"] == params:
            return job
    return None


def library_busy(service: JobService) -> LibraryBusy:
    """The ``lock_held`` refusal naming the jobs that hold the library, and saying
    so when the worker that held one died on this host."""
    holders = service.blockers(LIBRARY_LOCK)
    workers = WorkerRegistry(service.session_factory)
    workers.find_dead_on_this_host()
    dead = {w["id"] for w in workers.list(include_finished=True) if w["state"] == WorkerState.DEAD}
    named = []
    for holder in holders:
        job = service.get(holder["id"]) or {}
        owner = job.get("lease_owner")
        gone = (
            f", its worker {owner} is gone: it resumes when a worker runs (run the command "
            f"that started it again, or `photo-pipeline job wait {holder['id']}`)"
            if owner in dead
            else ""
        )
        named.append(f"{holder['job_type']} job {holder['id']} ({holder['state']}{gone})")
    return LibraryBusy(
        f"the library is busy: {', '.join(named) or 'another job'} holds it; wait for it to "
        "finish or cancel it with `photo-pipeline job cancel ID`",
        holders,
    )


# ── the journal ────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class Entry:
    """One journal row, with what executing it needs."""

    id: int
    seq: int
    kind: str
    action: str
    file_id: int | None
    source_id: int
    source_root: str
    source_path: str
    dest_path: str
    content_hash: str
    state: str

    @property
    def item_key(self) -> str:
        return f"{self.seq}:{paths.display(self.source_path)}"[:2000]

    def source(self) -> str:
        return os.path.join(self.source_root, paths.from_text(self.source_path))

    def dest(self, destination: str) -> str:
        return os.path.join(destination, paths.from_text(self.dest_path))


Recorded = tuple[Entry, dict[str, Any], Any]
CatalogUpdate = Callable[[Session, list[Recorded]], None]


class Journal:
    """The entries of one organize job. Writes are fenced: they land only while
    ``fence`` (the running job's id and fencing token) still holds the job, so a
    worker that lost its lease cannot overwrite what its successor recorded."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        job_id: str,
        fence: tuple[str, int] | None = None,
    ) -> None:
        self._session_factory = session_factory
        self.job_id = job_id
        self._fence = fence
        self._pending: list[Recorded] = []

    def load(self) -> list[Entry]:
        query = (
            select(organize_entries, sources.c.path.label("root"))
            .join(sources, sources.c.id == organize_entries.c.source_id)
            .where(organize_entries.c.job_id == self.job_id)
            .order_by(organize_entries.c.seq)
        )
        with read_session(self._session_factory) as session:
            return [
                Entry(
                    r.id,
                    r.seq,
                    r.kind,
                    r.action,
                    r.file_id,
                    r.source_id,
                    r.root,
                    r.source_path,
                    r.dest_path,
                    r.content_hash,
                    r.state,
                )
                for r in session.execute(query)
            ]

    @transactional
    def write_plan(self, plan: list[PlanEntry]) -> None:
        """All entries in one transaction: a journal is either whole or absent."""
        now = utc_now()
        with write_session(self._session_factory) as session:
            self._check_fence(session)
            if session.scalar(
                select(organize_entries.c.id).where(organize_entries.c.job_id == self.job_id)
            ):
                return
            rows = [
                {
                    "job_id": self.job_id,
                    "seq": e.seq,
                    "kind": e.kind,
                    "action": e.action,
                    "reason": e.reason,
                    "file_id": e.candidate.file_id,
                    "source_id": e.candidate.source_id,
                    "source_path": e.candidate.path,
                    "dest_path": e.dest_path,
                    "content_hash": e.candidate.content_hash,
                    "size": e.candidate.size,
                    "state": SKIPPED if e.action == "skip" else PLANNED,
                    "updated_at": now,
                }
                for e in plan
            ]
            for start in range(0, len(rows), 1000):
                session.execute(organize_entries.insert(), rows[start : start + 1000])

    def _check_fence(self, session: Session) -> None:
        if self._fence is None:
            return
        job_id, token = self._fence
        # Row-locked, so a claim by another worker cannot commit in between.
        current = session.scalar(
            select(jobs.c.fencing_token).where(jobs.c.id == job_id).with_for_update()
        )
        if current != token:
            raise LeaseLost(f"job {job_id} is no longer held under fencing token {token}")

    def record(self, entry: Entry, values: dict[str, Any], extra: Any = None) -> None:
        """Buffer an entry's new column ``values`` (and ``extra`` for the catalogue);
        written by ``writer``, with the entry's item result."""
        self._pending.append((entry, values, extra))

    def writer(self, catalog_update: CatalogUpdate) -> RowWriter | None:
        """The buffered entries and their catalogue changes, as a writer for the job's
        own fenced transaction (``JobContext.before_flush``): they land with their
        items' results, or not at all. None when nothing is buffered."""
        if not self._pending:
            return None
        batch, self._pending = self._pending, []

        def write(session: Session) -> None:
            catalog_update(session, batch)
            self._write(session, batch)

        return write

    def _write(self, session: Session, batch: list[Recorded]) -> None:
        now = utc_now()
        # One executemany per shape of values (done, failed, undone), not one
        # statement per entry.
        shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for entry, values, _ in batch:
            shapes.setdefault(tuple(sorted(values)), []).append(
                {"entry_id": entry.id, "updated_at": now, **values}
            )
        for columns, rows in shapes.items():
            statement = (
                update(organize_entries)
                .where(organize_entries.c.id == bindparam("entry_id"))
                .values({c: bindparam(c) for c in ("updated_at", *columns)})
            )
            session.execute(statement, rows)


# ── the organize job ───────────────────────────────────────────────────────────
@registry.handler(JOB_TYPE)
def organize(ctx: JobContext) -> None:
    parked.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    params = ctx.params
    destination = params["destination"]
    catalog = Catalog(ctx.session_factory)
    journal = Journal(ctx.session_factory, ctx.job_id, (ctx.job_id, ctx.fencing_token))
    entries = journal.load()
    if not entries:
        # First run: the whole plan is journalled before any file is touched.
        check_destination(ctx.session_factory, destination)
        plan = build_plan(
            catalogue_candidates(ctx.session_factory, destination),
            parse(params["template"]),
            move=params["move"],
            existing=DestinationState(destination),
            keep_duplicates=params.get("keep_duplicates", False),
        )
        for planned in plan:
            inside(destination, paths.from_text(planned.dest_path))
        journal.write_plan(plan)
        entries = journal.load()
    dest_source = catalog.add_source(Path(destination))["id"]
    work = [e for e in entries if e.action != "skip"]
    for start in range(0, len(work), 1000):
        ctx.add_items(e.item_key for e in work[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    os.makedirs(destination, exist_ok=True)
    # Temp files of an interrupted earlier attempt (one listing per folder).
    transfer.sweep_temp_files(
        (os.path.dirname(e.dest(destination)) for e in work), JOB_TYPE, ctx.job_id
    )
    dest_device = os.stat(destination).st_dev

    # A copy's new name is made durable with its folder's fsync, once per folder for
    # a batch of copies, before the journal says they are done. (A move syncs each
    # file's folder at once: its source goes next.)
    unsynced: set[str] = set()

    def write_journal() -> RowWriter | None:
        for folder in sorted(unsynced):
            fd = transfer.open_folder(destination, folder)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        unsynced.clear()
        return journal.writer(lambda s, batch: _catalogue_organized(s, dest_source, batch))

    ctx.before_flush(write_journal)
    link_device = dest_device if params.get("hard_links", True) else None

    def place(entry: Entry) -> os.stat_result:
        try:
            return _organize_one(entry, destination, ctx, params["move"], link_device)
        except OSError as exc:  # an I/O error on this file fails it, not the job
            raise transfer.write_error(exc, exc.filename or entry.dest(destination)) from exc

    def record(key: str, entry: Entry, placed: Future[os.stat_result] | None) -> None:
        if placed is None:
            ctx.succeed(key)  # done before a crash; only its item was not yet recorded
            return
        try:
            info = placed.result()
        except ItemError as exc:
            failure = {"state": FAILED, "error_code": exc.code, "error_message": exc.message}
            journal.record(entry, failure)
            ctx.fail(key, exc.code, exc.message)
            return
        done = {
            "state": DONE,
            "dest_inode": info.st_ino,
            "dest_mtime_ns": info.st_mtime_ns,
            "error_code": None,
            "error_message": None,
        }
        if not params["move"]:
            unsynced.add(os.path.dirname(paths.from_text(entry.dest_path)))
        journal.record(entry, done, info)
        ctx.succeed(key)

    # A few files at once: one's reads and hashing overlap another's writes and
    # fsyncs (BLAKE3 and the OS calls let go of the GIL). Each file still goes
    # through every step of transfer; results are journalled in plan order.
    with ThreadPoolExecutor(_THREADS, thread_name_prefix="organize") as pool:
        queue: deque[tuple[str, Entry, Future[os.stat_result] | None]] = deque()
        try:
            for key in ctx.items():
                entry = by_seq[int(key.split(":", 1)[0])]
                # Two names of one content may be one inode: never in flight together
                # (one's read would hold off the other's write lease).
                while queue and (
                    len(queue) >= _AHEAD
                    or queue[0][2] is None
                    or queue[0][2].done()
                    or any(e.content_hash == entry.content_hash for _, e, _ in queue)
                ):
                    record(*queue.popleft())
                placed = None if entry.state == DONE else pool.submit(place, entry)
                queue.append((key, entry, placed))
            for _, _, placed in queue:
                if ctx.should_stop and placed is not None:
                    placed.cancel()  # not started: stays for the next run (or the cancel)
            while queue:
                key, entry, placed = queue.popleft()
                if placed is None or not placed.cancelled():
                    record(key, entry, placed)  # what started finishes and is journalled
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    ctx.flush()
    transfer.sweep_temp_files(
        (os.path.dirname(e.dest(destination)) for e in work), JOB_TYPE, ctx.job_id
    )


def _organize_one(
    entry: Entry, destination: str, ctx: JobContext, move: bool, link_device: int | None
) -> os.stat_result:
    """Place one file; safe to run again after a crash at any point."""
    inside(destination, paths.from_text(entry.dest_path))
    source_rel, dest_rel = paths.from_text(entry.source_path), paths.from_text(entry.dest_path)
    names = transfer.PrivateNames(JOB_TYPE, ctx.job_id, entry.seq, ctx.fencing_token)
    with (
        transfer.spot(entry.source_root, source_rel) as source,
        transfer.spot(destination, dest_rel, create=True) as dest,
    ):
        if move:
            transfer.unpark_leftovers(source, names.prefix)  # parked by a run that died mid-remove
        there = transfer.hash_at(dest)
        if there is not None and there[0] != entry.content_hash:
            raise ItemError(
                "destination_taken", f"{dest.path}: a different file has this name; kept it"
            )
        seen = None  # placed by an earlier run: the source is checked by its bytes alone
        if there is None:
            link = (
                move and link_device is not None and transfer.device(entry.source()) == link_device
            )
            try:
                _, seen = transfer.place(
                    source, dest, names.temp, entry.content_hash, link=link, sync_folder=move
                )
            except ItemError as exc:
                # Lost a race for the name: fine if the winner placed this very content.
                placed = transfer.hash_at(dest)
                if exc.code != "destination_taken" or not placed or placed[0] != entry.content_hash:
                    raise
        if move:
            transfer.retire(source, entry.content_hash, seen, names.parking)
        return os.stat(dest.name, dir_fd=dest.fd, follow_symlinks=False)


def _catalogue_organized(session: Session, dest_source: int, batch: list[Recorded]) -> None:
    """Keep the catalogue true to the disk: a moved file's row follows it into the
    destination (a source itself), a copied photo gets a row there too."""
    rows = [
        {
            "move": entry.action == "move",
            "file_id": entry.file_id,
            "photo": entry.kind != "sidecar",
            "content_hash": entry.content_hash,
            "source_id": dest_source,
            "path": entry.dest_path,
            "size": info.st_size,
            "mtime_ns": info.st_mtime_ns,
            "inode": info.st_ino,
        }
        for entry, values, info in batch
        if values["state"] == DONE
    ]
    Catalog.record_organized(session, rows, utc_now())


# ── undo ───────────────────────────────────────────────────────────────────────
@registry.handler(UNDO_JOB_TYPE)
def undo(ctx: JobContext) -> None:
    parked.restore_abandoned(ctx.session_factory)  # files a killed, stopped job hid
    organize_id = ctx.params["organize_job_id"]
    destination = ctx.params["destination"]
    journal = Journal(ctx.session_factory, organize_id, (ctx.job_id, ctx.fencing_token))
    # Newest first; entries not recorded done are undone too (a crash may have placed
    # them): each step looks at the disk before it acts.
    work = [e for e in reversed(journal.load()) if e.action != "skip" and e.state != SKIPPED]
    keys = [e.item_key for e in work]
    for start in range(0, len(keys), 1000):
        ctx.add_items(keys[start : start + 1000])
    by_seq = {e.seq: e for e in work}
    dest_source = Catalog(ctx.session_factory).add_source(Path(destination))["id"]
    transfer.sweep_temp_files((os.path.dirname(e.source()) for e in work), "undo", ctx.job_id)

    def write_journal() -> RowWriter | None:
        return journal.writer(lambda s, batch: _catalogue_undone(s, dest_source, batch))

    ctx.before_flush(write_journal)
    for key in ctx.items():
        entry = by_seq[int(key.split(":", 1)[0])]
        if entry.state == UNDONE:
            ctx.succeed(key)
            continue
        try:
            try:
                restored = _undo_one(entry, destination, ctx)
            except OSError as exc:
                raise transfer.write_error(exc, exc.filename or entry.source()) from exc
        except ItemError as exc:
            ctx.fail(key, exc.code, exc.message)
            continue
        journal.record(entry, {"state": UNDONE}, restored)
        ctx.succeed(key)
    ctx.flush()
    transfer.sweep_temp_files((os.path.dirname(e.source()) for e in work), "undo", ctx.job_id)
    if not ctx.should_stop:
        _remove_empty_folders(destination, work)


def _undo_one(
    entry: Entry, destination: str, ctx: JobContext
) -> tuple[bool, os.stat_result | None]:
    """Reverse one entry. Returns whether anything was placed to reverse, and the
    restored source's stat for a move."""
    expected = entry.content_hash
    source_rel, dest_rel = paths.from_text(entry.source_path), paths.from_text(entry.dest_path)
    names = transfer.PrivateNames("undo", ctx.job_id, entry.seq, ctx.fencing_token)
    with contextlib.ExitStack() as stack:
        dest: transfer.Spot | None = None
        there: tuple[str, transfer.Identity] | None = None
        try:
            dest = stack.enter_context(transfer.spot(destination, dest_rel))
        except ItemError as exc:
            if exc.code != "missing":
                raise
        if dest is not None:
            transfer.unpark_leftovers(dest, names.prefix)  # parked by a run that died mid-remove
            there = transfer.hash_at(dest)
        if (there and there[0]) != expected and entry.state != DONE:
            return False, None  # this job never placed it (it failed, or never ran)
        if there is not None and there[0] != expected:
            raise ItemError("destination_changed", f"{dest and dest.path}: changed since organize")
        if entry.action == "copy":
            if dest is not None and there is not None:
                with transfer.spot(entry.source_root, source_rel) as source:
                    original = transfer.hash_at(source)
                if original is None or original[0] != expected:
                    raise ItemError(
                        "missing", f"{source.path}: the original is gone; the copy is kept"
                    )
                transfer.retire(dest, expected, there[1], names.parking)
            return True, None
        source = stack.enter_context(transfer.spot(entry.source_root, source_rel, create=True))
        at_source = transfer.hash_at(source)
        seen = None
        if at_source is None:
            if dest is None or there is None:
                raise ItemError("missing", f"{entry.dest(destination)}: the moved file is gone")
            link = transfer.device(dest.path) == transfer.device_of_folder(source.path)
            _, seen = transfer.place(dest, source, names.temp, expected, link=link)
        elif at_source[0] != expected:
            raise ItemError(
                "source_taken", f"{source.path}: another file now has this name; left alone"
            )
        if dest is not None:
            transfer.retire(dest, expected, seen, names.parking)
        return True, os.stat(source.name, dir_fd=source.fd, follow_symlinks=False)


def _catalogue_undone(session: Session, dest_source: int, batch: list[Recorded]) -> None:
    rows = []
    for entry, _, (placed, restored) in batch:
        if not placed:
            continue
        rows.append(
            {
                "move": entry.action == "move",
                "dest_source_id": dest_source,
                "dest_path": entry.dest_path,
                "source_id": entry.source_id,
                "path": entry.source_path,
                "size": restored.st_size if restored else None,
                "mtime_ns": restored.st_mtime_ns if restored else None,
                "inode": restored.st_ino if restored else None,
            }
        )
    Catalog.record_unorganized(session, rows, utc_now())


def _remove_empty_folders(destination: str, entries: list[Entry]) -> None:
    """Folders the job created and that are empty again go (deepest first)."""
    folders: set[str] = set()
    for entry in entries:
        folder = os.path.dirname(entry.dest(destination))
        while folder != destination and folder.startswith(destination + os.sep):
            folders.add(folder)
            folder = os.path.dirname(folder)
    for folder in sorted(folders, key=len, reverse=True):
        with contextlib.suppress(OSError):
            os.rmdir(folder)


# ── what a stopped job may have left ───────────────────────────────────────────
def _unfinished(session: Session, organize_job_id: str, states: list[str]) -> Iterator[Row[Any]]:
    return iter(
        session.execute(
            select(
                organize_entries.c.seq,
                organize_entries.c.action,
                organize_entries.c.source_path,
                organize_entries.c.dest_path,
                sources.c.path.label("root"),
            )
            .join(sources, sources.c.id == organize_entries.c.source_id)
            .where(
                organize_entries.c.job_id == organize_job_id,
                organize_entries.c.action != "skip",
                organize_entries.c.state.in_(states),
            )
        )
    )


def _organize_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    """A source a move parked, a temp copy in the destination: entries not done."""
    for row in _unfinished(session, job_id, [PLANNED, FAILED]):
        if row.action == "move":
            yield parked.Place(JOB_TYPE, row.root, paths.from_text(row.source_path), row.seq)
        yield parked.Place(JOB_TYPE, params["destination"], paths.from_text(row.dest_path), row.seq)


def _undo_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    """A placed file the undo parked, a temp copy on its way back: entries not undone."""
    for row in _unfinished(session, params["organize_job_id"], [PLANNED, FAILED, DONE]):
        yield parked.Place("undo", params["destination"], paths.from_text(row.dest_path), row.seq)
        yield parked.Place("undo", row.root, paths.from_text(row.source_path), row.seq)


parked.register(JOB_TYPE, _organize_leftovers)
parked.register(UNDO_JOB_TYPE, _undo_leftovers)


# ── reports ────────────────────────────────────────────────────────────────────
def organize_report(
    session_factory: sessionmaker[Session], job_id: str, *, limit: int = 100
) -> dict[str, Any]:
    """What an organize job did: entry counts per state and action, and the first
    ``limit`` failed or skipped entries with their reasons."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(organize_entries)
            .where(organize_entries.c.job_id == job_id)
            .order_by(organize_entries.c.seq)
        ).all()
    counts: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
        if row.state in (FAILED, SKIPPED) and len(problems) < limit:
            problems.append(
                {
                    "seq": row.seq,
                    "state": row.state,
                    "source": paths.display(row.source_path),
                    "destination": paths.display(row.dest_path),
                    "reason": row.error_code or row.reason,
                    "message": row.error_message,
                }
            )
    return {"job_id": job_id, "entries": len(rows), "states": counts, "problems": problems}


__all__ = [
    "DEFAULT_TEMPLATE",
    "JOB_TYPE",
    "LIBRARY_LOCK",
    "UNDO_JOB_TYPE",
    "Candidate",
    "LibraryBusy",
    "OrganizeError",
    "PlanEntry",
    "build_plan",
    "check_destination",
    "library_busy",
    "organize_report",
    "plan_organize",
    "start_organize",
    "start_undo",
    "undo_key",
]
