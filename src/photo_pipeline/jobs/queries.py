"""Read-only views of jobs for people, the CLI and the API: one job, a page of jobs,
ids by prefix, prerequisites, events after a cursor, items and progress. Each is one
read transaction; none takes a lock or the SQLite write lock."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import func, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import job_events, job_items, job_prerequisites, jobs
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.events import event_dict
from photo_pipeline.jobs.rows import JobSnapshot, require_job, snapshot
from photo_pipeline.jobs.states import ITEM_DONE_STATES, ItemState
from photo_pipeline.jobs.store import JobStore


def get(store: JobStore, job_id: str) -> JobSnapshot | None:
    with read_session(store.session_factory) as session:
        row = session.execute(select(jobs).where(jobs.c.id == job_id)).one_or_none()
        return None if row is None else snapshot(row)


def find_by_idempotency_key(store: JobStore, key: str) -> JobSnapshot | None:
    with read_session(store.session_factory) as session:
        row = session.execute(select(jobs).where(jobs.c.idempotency_key == key)).one_or_none()
        return None if row is None else snapshot(row)


def ids_starting_with(store: JobStore, prefix: str, *, limit: int) -> list[str]:
    """Ids of the jobs whose id starts with ``prefix`` (at most ``limit``, in id order)."""
    limit = check.integer("limit", limit, 1, 1_000)
    # LIKE, not a range: a range's bounds are only right in a bytewise collation.
    query = select(jobs.c.id).where(jobs.c.id.startswith(prefix, autoescape=True))
    with read_session(store.session_factory) as session:
        return list(session.scalars(query.order_by(jobs.c.id).limit(limit)))


def list_jobs(
    store: JobStore,
    *,
    states: Iterable[str] | None,
    job_types: Iterable[str] | None,
    before: str | None,
    limit: int,
) -> list[JobSnapshot]:
    """Newest jobs first; ``before`` (a job id) pages on to older ones."""
    limit = check.integer("limit", limit, 1, 10_000)
    query = select(jobs).order_by(jobs.c.seq.desc()).limit(limit)
    if states is not None:
        query = query.where(jobs.c.state.in_([check.job_state(s) for s in states]))
    if job_types is not None:
        query = query.where(jobs.c.job_type.in_(list(job_types)))
    with read_session(store.session_factory) as session:
        if before is not None:
            query = query.where(jobs.c.seq < require_job(session, before))
        return [snapshot(r) for r in session.execute(query)]


def prerequisites(store: JobStore, job_ids: Iterable[str]) -> dict[str, list[str]]:
    """Each job's prerequisites (ids)."""
    ids = list(job_ids)
    found: dict[str, list[str]] = {job_id: [] for job_id in ids}
    query = (
        select(job_prerequisites)
        .where(job_prerequisites.c.job_id.in_(ids))
        .order_by(job_prerequisites.c.job_id, job_prerequisites.c.prerequisite_id)
    )
    with read_session(store.session_factory) as session:
        for row in session.execute(query):
            found[row.job_id].append(row.prerequisite_id)
    return found


def events_after(
    store: JobStore, job_id: str, after: int, *, limit: int | None
) -> list[dict[str, Any]]:
    """Events with ``seq > after`` in order. Per job, ``seq`` is allocated under the
    job's row lock, so a reader never sees a later event before an earlier one
    commits."""
    query = (
        select(job_events)
        .where(job_events.c.job_id == job_id, job_events.c.seq > after)
        .order_by(job_events.c.seq)
    )
    if limit is not None:
        query = query.limit(check.integer("limit", limit, 1, 100_000))
    with read_session(store.session_factory) as session:
        require_job(session, job_id)
        return [event_dict(e) for e in session.execute(query)]


def progress(store: JobStore, job_id: str) -> dict[str, Any]:
    """Item counts of one job; raises ``job_not_found``."""
    with read_session(store.session_factory) as session:
        require_job(session, job_id)
    return progress_of(store, [job_id])[job_id]


def progress_of(store: JobStore, job_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Item counts from the durable item rows: total, done, and per state, of many
    jobs in one query (unknown ids count as empty)."""
    ids = list(job_ids)
    by_job: dict[str, dict[str, int]] = {job_id: {} for job_id in ids}
    query = (
        select(job_items.c.job_id, job_items.c.state, func.count())
        .where(job_items.c.job_id.in_(ids))
        .group_by(job_items.c.job_id, job_items.c.state)
    )
    with read_session(store.session_factory) as session:
        for job_id, state, count in session.execute(query):
            by_job[job_id][state] = count
    return {
        job_id: {
            "total": sum(by_state.values()),
            "done": sum(n for state, n in by_state.items() if state in ITEM_DONE_STATES),
            "by_state": by_state,
        }
        for job_id, by_state in by_job.items()
    }


def items(
    store: JobStore,
    job_id: str,
    *,
    states: Iterable[str] | None,
    after_id: int,
    limit: int,
) -> list[dict[str, Any]]:
    """Items in enqueue order, optionally of some states, paged by ``after_id``."""
    limit = check.integer("limit", limit, 1, 100_000)
    query = (
        select(job_items)
        .where(job_items.c.job_id == job_id, job_items.c.id > after_id)
        .order_by(job_items.c.id)
        .limit(limit)
    )
    if states is not None:
        query = query.where(job_items.c.state.in_([ItemState(s) for s in states]))
    with read_session(store.session_factory) as session:
        require_job(session, job_id)
        return [dict(r._mapping) for r in session.execute(query)]
