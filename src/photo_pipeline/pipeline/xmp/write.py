"""The ``xmp_write`` job: every asset whose curation or people changed
(``curation.changes``' outbox) gets it written to its XMP sidecar (people as MWG
regions, ``.regions``), a batch at a time; and how it and its undo (``.undo``) are
queued.

One item per asset and version (``<asset id>@<version>``). A batch is journalled first
(``xmp_entries``: the sidecar's bytes before, or that there was none), committed, then
each sidecar is written whole (``media.xmp.write_sidecar``: temp file, fsync, rename),
then the journal, the sidecar's record (``xmp_sidecars``) and the outbox are updated in
one transaction. A worker killed anywhere leaves each sidecar old or new, never a mix;
the re-run item writes it again, and its journal keeps the bytes from before the job.

At most one xmp job runs at a time (the ``xmp`` lock): a change made while one is
queued or running joins it, and the running job drains the outbox until it is empty. A
change committed in the instant a job ends, or while an undo runs, waits in the outbox
for the next change, scan or ``photo-pipeline xmp write``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import asset_curation, curation_pending, xmp_entries
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import (
    ACTIVE_STATES,
    Enqueued,
    JobNotFound,
    JobService,
    JobState,
    LockHeld,
    utc_now,
)
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.media.sidecar import MAX_SIDECAR_BYTES
from photo_pipeline.media.xmp import (
    XmpCuration,
    XmpWriteError,
    write_sidecar,
)
from photo_pipeline.media.xmp_regions import WantedRegions
from photo_pipeline.pipeline.curation.changes import pending_changes
from photo_pipeline.pipeline.files import paths, roots
from photo_pipeline.pipeline.xmp.fields import wanted_of
from photo_pipeline.pipeline.xmp.records import save_sidecar
from photo_pipeline.pipeline.xmp.regions import FIELD as REGIONS
from photo_pipeline.pipeline.xmp.regions import wanted_regions
from photo_pipeline.pipeline.xmp.sidecar_path import photos_of, sidecar_of

JOB_TYPE = "xmp_write"
UNDO_JOB_TYPE = "xmp_write_undo"
XMP_LOCK = "xmp"
_BATCH = 50
_PENDING_PAGE = 1000

# Item failure codes (stable).
NO_FILE = "no_present_file"
READ_ONLY = "source_read_only"
OUTSIDE = "symlink_outside_roots"
TOO_BIG = "sidecar_too_big"
WRITE_FAILED = "xmp_write_failed"
CHANGED_SINCE = "changed_since_write"


class NotAnXmpWrite(PhotoPipelineError):
    """Undo was asked of a job that is not an xmp_write, or left nothing to undo."""

    code = "not_an_xmp_write"
    status = 422


def request_write(service: JobService) -> Enqueued | None:
    """Queue an ``xmp_write`` when curation changes wait in the outbox, or join the
    one queued or running; None when nothing waits, or while an undo holds the lock
    (what waits is written by the next request)."""
    if not pending_changes(service.session_factory, limit=1):
        return None
    try:
        return service.submit_or_join(
            JOB_TYPE, lock=XMP_LOCK, joins=lambda job: job["job_type"] == JOB_TYPE, params={}
        )
    except LockHeld:
        return None


class NothingToWrite(PhotoPipelineError):
    """Every sidecar holds the catalogue's curation already (or the writer is held
    by an undo: it runs once that ends)."""

    code = "nothing_to_write"
    status = 422


def start_write(service: JobService) -> Enqueued:
    """``request_write`` for a front door: ``NothingToWrite`` when nothing waits."""
    queued = request_write(service)
    if queued is None:
        raise NothingToWrite(
            detail="no curation change waits to be written (or an xmp undo runs: "
            "ask again once it ends)"
        )
    return queued


def start_undo(service: JobService, job_id: str) -> Enqueued:
    """Queue an ``xmp_write_undo`` putting back the sidecars ``job_id`` wrote (and that
    are not put back yet). Raises ``JobNotFound``, ``NotAnXmpWrite``, or ``LockHeld``
    while an xmp job is active."""
    job = service.get(job_id)
    if job is not None and job["job_type"] != JOB_TYPE:
        raise NotAnXmpWrite(detail=f"job {job_id} is a {job['job_type']} job, not an xmp_write")
    if job is not None and JobState(job["state"]) in ACTIVE_STATES:
        raise LockHeld(
            f"xmp_write {job_id} is {job['state']}: undo it once it ends", blocking_jobs=[job_id]
        )
    with read_session(service.session_factory) as session:
        todo = list(
            session.scalars(
                select(xmp_entries.c.asset_id)
                .where(xmp_entries.c.job_id == job_id, xmp_entries.c.state == "written")
                .order_by(xmp_entries.c.asset_id)
            )
        )
    if job is None and not todo:
        raise JobNotFound(detail=f"no xmp_write job {job_id}")
    if not todo:
        raise NotAnXmpWrite(
            "nothing_to_undo", f"xmp_write {job_id} wrote nothing that is not undone already"
        )
    return service.submit(
        UNDO_JOB_TYPE, lock=XMP_LOCK, items=[str(a) for a in todo], params={"job_id": job_id}
    )


def journal(factory: sessionmaker[Session], job_id: str) -> list[dict[str, Any]]:
    """What xmp_write ``job_id`` wrote: one dict per asset (without the old bytes)."""
    columns = [c for c in xmp_entries.c if c.name != "old_bytes"]
    with read_session(factory) as session:
        rows = session.execute(
            select(*columns).where(xmp_entries.c.job_id == job_id).order_by(xmp_entries.c.asset_id)
        ).all()
    return [dict(row._mapping) for row in rows]


@dataclass
class _Planned:
    key: str
    asset_id: int
    path: str
    wanted: XmpCuration
    album_ids: dict[str, int]
    regions: WantedRegions | None
    existed: bool
    old: bytes | None


@registry.handler(JOB_TYPE)
def xmp_write(ctx: JobContext) -> None:
    factory = ctx.session_factory
    allowed = roots.library_roots(factory)
    while not ctx.should_stop:
        pending = pending_changes(factory, limit=_PENDING_PAGE)
        if pending:
            ctx.add_items(f"{row['asset_id']}@{row['version']}" for row in pending)
        done = 0
        batch: list[str] = []
        for key in ctx.items():
            batch.append(key)
            if len(batch) >= _BATCH:
                done += _write_batch(ctx, batch, allowed)
                batch = []
        if batch and not ctx.should_stop:
            done += _write_batch(ctx, batch, allowed)
        if not done:
            return  # the outbox holds only what already failed here


def _write_batch(ctx: JobContext, keys: list[str], allowed: tuple[str, ...]) -> int:
    factory = ctx.session_factory
    by_asset = {int(key.split("@", 1)[0]): key for key in keys}
    ids = sorted(by_asset)
    with read_session(factory) as session:
        wanted = wanted_of(session, ids)
        regions = wanted_regions(session, ids)
        photos = photos_of(session, ids)
        versions = dict(
            session.execute(
                select(asset_curation.c.asset_id, asset_curation.c.version).where(
                    asset_curation.c.asset_id.in_(ids)
                )
            ).all()
        )
    planned: list[_Planned] = []
    skipped: dict[int, tuple[str, str, str | None]] = {}  # asset -> code, message, path
    for asset_id in ids:
        photo = photos.get(asset_id)
        if photo is None:
            skipped[asset_id] = (NO_FILE, "no file of it is present to write beside", None)
            continue
        sidecar = sidecar_of(photo)
        refusal = _refusal(sidecar.path, allowed)
        if refusal is not None:
            skipped[asset_id] = (*refusal, sidecar.path)
            continue
        old = None
        if sidecar.exists:
            with open(sidecar.path, "rb") as file:
                old = file.read(MAX_SIDECAR_BYTES + 1)
            if len(old) > MAX_SIDECAR_BYTES:
                skipped[asset_id] = (TOO_BIG, f"more than {MAX_SIDECAR_BYTES} bytes", None)
                continue
        curation, album_ids = wanted[asset_id]
        planned.append(
            _Planned(
                by_asset[asset_id],
                asset_id,
                sidecar.path,
                curation,
                album_ids,
                regions.get(asset_id),
                sidecar.exists,
                old,
            )
        )
    _journal(factory, ctx.job_id, planned)

    written: dict[int, tuple[_Planned, Any]] = {}
    for entry in planned:
        if ctx.should_stop:
            return len(written)  # the rest run again when the job resumes
        try:
            written[entry.asset_id] = (
                entry,
                write_sidecar(entry.path, entry.wanted, entry.album_ids, regions=entry.regions),
            )
        except (XmpWriteError, OSError) as exc:
            skipped[entry.asset_id] = (WRITE_FAILED, str(exc), entry.path)
    _record(factory, ctx.job_id, written, skipped, versions)
    for asset_id, key in by_asset.items():
        if asset_id in skipped:
            code, message, _ = skipped[asset_id]
            ctx.fail(key, code, message)
        elif asset_id in written:
            ctx.succeed(key)
    return len(written) + len(skipped)


def _refusal(path: str, allowed: tuple[str, ...]) -> tuple[str, str] | None:
    """Why the sidecar at ``path`` cannot be written, or None."""
    folder = os.path.dirname(path)
    try:
        roots.real_path_inside(folder, allowed)
        if os.path.lexists(path):
            roots.real_path_inside(path, allowed)
    except roots.PathOutsideRoots as exc:
        return OUTSIDE, exc.detail
    if not os.access(folder, os.W_OK | os.X_OK):
        return READ_ONLY, (
            f"{paths.display(paths.to_text(folder))} is read-only: "
            "the curation is kept in the catalogue only"
        )
    return None


@transactional
def _journal(factory: sessionmaker[Session], job_id: str, planned: list[_Planned]) -> None:
    """The bytes before, committed before any rename (a re-run keeps the first)."""
    if not planned:
        return
    now = utc_now()
    with write_session(factory) as session:
        for entry in planned:
            session.execute(
                insert_for(session, xmp_entries)
                .values(
                    job_id=job_id,
                    asset_id=entry.asset_id,
                    path=paths.to_text(entry.path),
                    existed=entry.existed,
                    old_bytes=entry.old,
                    state="planned",
                    written_at=now,
                )
                .on_conflict_do_nothing(index_elements=["job_id", "asset_id"])
            )


@transactional
def _record(
    factory: sessionmaker[Session],
    job_id: str,
    written: dict[int, tuple[_Planned, Any]],
    skipped: dict[int, tuple[str, str, str | None]],
    versions: dict[int, int],
) -> None:
    """The batch's outcome: journal, sidecar records, and the outbox (up to the
    version written; a failed asset leaves it too, until its curation changes again)."""
    now = utc_now()
    with write_session(factory) as session:
        for asset_id, (entry, done) in written.items():
            session.execute(
                update(xmp_entries)
                .where(xmp_entries.c.job_id == job_id, xmp_entries.c.asset_id == asset_id)
                .values(state="written", new_sha256=done.sha256, written_at=now)
            )
            save_sidecar(
                session,
                asset_id,
                path=entry.path,
                fields={**entry.wanted.fields(), REGIONS: done.regions or []},
                stamp=f"{done.size}:{done.mtime_ns}",
                state="written",
                now=now,
            )
        for asset_id, (code, message, path) in skipped.items():
            state = "read_only" if code == READ_ONLY else "failed"
            save_sidecar(
                session, asset_id, path=path, state=state, message=f"{code}: {message}", now=now
            )
        for asset_id in [*written, *skipped]:
            session.execute(
                delete(curation_pending).where(
                    curation_pending.c.asset_id == asset_id,
                    curation_pending.c.version <= versions.get(asset_id, 0),
                )
            )
