"""A job's row as the coordinator reads it: locked together with the facts its state
changes need, or just its ``seq``; and as the snapshot (a plain dict) callers get."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Row, Select, select
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import EPOCH, UTCDateTime, job_items, job_prerequisites, jobs
from photo_pipeline.jobs.errors import JobNotFound
from photo_pipeline.jobs.states import ItemState

JobSnapshot = dict[str, Any]


def lock_job(session: Session, job_id: str) -> Row[Any]:
    """The job's row, locked for update, with its facts; JobNotFound if unknown."""
    row = session.execute(
        job_with_facts().where(jobs.c.id == job_id).with_for_update(of=jobs)
    ).one_or_none()
    if row is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return row


def require_job(session: Session, job_id: str) -> int:
    """The job's ``seq`` (its enqueue order); raises ``job_not_found``."""
    seq = session.scalar(select(jobs.c.seq).where(jobs.c.id == job_id))
    if seq is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return int(seq)


def job_with_facts() -> Select[Any]:
    """A job row plus what its state changes need to know, read under the same row
    lock (every item writer takes that lock first, so the facts cannot go stale)."""
    items_pending = (
        select(job_items.c.id)
        .where(
            job_items.c.job_id == jobs.c.id,
            job_items.c.state.in_([ItemState.QUEUED, ItemState.RUNNING]),
        )
        .exists()
    )
    has_dependents = (
        select(job_prerequisites.c.job_id)
        .where(job_prerequisites.c.prerequisite_id == jobs.c.id)
        .exists()
    )
    return select(
        jobs, items_pending.label("items_pending"), has_dependents.label("has_dependents")
    )


HIDDEN = frozenset({"request_hash", "seq", "items_pending", "has_dependents", "owner_dead"})


def snapshot(row: Row[Any]) -> JobSnapshot:
    pairs = zip(row._fields, row, strict=True)
    return {key: value for key, value in pairs if key not in HIDDEN}


def snapshot_of(values: tuple[Any, ...]) -> JobSnapshot:
    """The snapshot of a job's row read by the driver, its columns in ``jobs.c``
    order (jobs.hot_path), converted as SQLAlchemy would have."""
    return {
        name: EPOCH + value * _MICROSECOND if is_time and value is not None else value
        for (name, is_time), value in zip(_DRIVER_COLUMNS, values, strict=True)
        if name not in HIDDEN
    }


# UTCDateTime columns come from the driver as integer microseconds.
_DRIVER_COLUMNS = [(c.name, isinstance(c.type, UTCDateTime)) for c in jobs.c]
_MICROSECOND = timedelta(microseconds=1)
