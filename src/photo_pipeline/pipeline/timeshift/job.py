"""The ``timeshift`` and ``timeshift_undo`` jobs and how they are queued. Both hold
the library-wide ``"library"`` lock, which organize holds too: a shift never runs
while files are being organized by their dates."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import timeshift_entries
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import (
    ACTIVE_STATES,
    Enqueued,
    JobNotFound,
    JobService,
    JobState,
    LockHeld,
)
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.pipeline.library.locks import LIBRARY_LOCK
from photo_pipeline.pipeline.timeshift.apply import apply_shift, apply_undo
from photo_pipeline.pipeline.timeshift.plan import NothingToShift, plan_timeshift, shift_request

JOB_TYPE = "timeshift"
UNDO_JOB_TYPE = "timeshift_undo"

_BATCH = 200


class NotATimeshift(PhotoPipelineError):
    """Undo was asked of a job that is not a timeshift, or left nothing to undo."""

    code = "not_a_timeshift"
    status = 422


def start_timeshift(
    service: JobService,
    *,
    camera: str | None = None,
    asset_ids: list[int] | None = None,
    by: str | timedelta | None = None,
    set_to: str | None = None,
    since: str | None = None,
    until: str | None = None,
    idempotency_key: str | None = None,
) -> Enqueued:
    """Queue a ``timeshift`` job over the assets ``plan_timeshift`` lists (its items
    are their ids, fixed now): of a camera model or named by id, shifted ``by`` or
    ``set_to`` a local date and time. Raises ``InvalidShift``, ``UnknownAssets``,
    ``NothingToShift``, or ``LockHeld`` while organize or another timeshift is active.
    A replay of ``idempotency_key`` returns its job (before the assets are planned
    again)."""
    chosen: dict[str, Any] = {
        "camera": camera,
        "asset_ids": asset_ids,
        "by": by,
        "set_to": set_to,
        "since": since,
        "until": until,
    }
    request = shift_request(**chosen)
    replayed = service.replay(idempotency_key, JOB_TYPE, request)
    if replayed is not None:
        return replayed
    plan = plan_timeshift(service.session_factory, **chosen)
    if not plan["count"]:
        what = f"camera model {camera!r}" if camera is not None else "those assets"
        raise NothingToShift(detail=f"no asset of {what} in that time window")
    return service.submit(
        JOB_TYPE,
        lock=LIBRARY_LOCK,
        items=[str(entry["asset_id"]) for entry in plan["assets"]],
        params=request,
        idempotency_key=idempotency_key,
    )


def start_undo(service: JobService, job_id: str, *, idempotency_key: str | None = None) -> Enqueued:
    """Queue a ``timeshift_undo`` job restoring what timeshift ``job_id`` changed (and
    is not undone yet). Raises ``JobNotFound``, ``NotATimeshift``, or ``LockHeld``
    while that job (or organize) still runs. A replay of ``idempotency_key`` returns
    its job (which, having run, left nothing to undo)."""
    replayed = service.replay(idempotency_key, UNDO_JOB_TYPE, {"job_id": job_id})
    if replayed is not None:
        return replayed
    job = service.get(job_id)
    if job is not None and job["job_type"] != JOB_TYPE:
        raise NotATimeshift(detail=f"job {job_id} is a {job['job_type']} job, not a timeshift")
    if job is not None and JobState(job["state"]) in ACTIVE_STATES:
        raise LockHeld(
            f"timeshift {job_id} is {job['state']}: undo it once it ends", blocking_jobs=[job_id]
        )
    with read_session(service.session_factory) as session:
        pending = list(
            session.scalars(
                select(timeshift_entries.c.asset_id)
                .where(
                    timeshift_entries.c.job_id == job_id, timeshift_entries.c.undone_at.is_(None)
                )
                .order_by(timeshift_entries.c.asset_id)
            )
        )
    if job is None and not pending:
        raise JobNotFound(detail=f"no timeshift job {job_id}")
    if not pending:
        raise NotATimeshift(
            "nothing_to_undo", f"timeshift {job_id} changed nothing that is not undone already"
        )
    return service.submit(
        UNDO_JOB_TYPE,
        lock=LIBRARY_LOCK,
        items=[str(asset_id) for asset_id in pending],
        params={"job_id": job_id},
        idempotency_key=idempotency_key,
    )


def _in_batches(ctx: JobContext, apply: Any) -> None:
    """Apply each batch of items in one transaction, then report them."""
    batch: list[str] = []

    def run() -> None:
        failures = apply([int(key) for key in batch])
        for key in batch:
            failure = failures.get(int(key))
            if failure is None:
                ctx.succeed(key)
            else:
                ctx.fail(key, *failure)
        batch.clear()

    for key in ctx.items():
        batch.append(key)
        if len(batch) >= _BATCH:
            run()
    if batch:
        run()


@registry.handler(JOB_TYPE)
def timeshift(ctx: JobContext) -> None:
    change: timedelta | datetime
    if ctx.params.get("set") is not None:
        change = datetime.fromisoformat(ctx.params["set"])
    else:
        change = timedelta(seconds=ctx.params["by_seconds"])
    _in_batches(ctx, lambda ids: apply_shift(ctx.session_factory, ctx.job_id, ids, change))


@registry.handler(UNDO_JOB_TYPE)
def timeshift_undo(ctx: JobContext) -> None:
    target = ctx.params["job_id"]
    _in_batches(ctx, lambda ids: apply_undo(ctx.session_factory, target, ctx.job_id, ids))
