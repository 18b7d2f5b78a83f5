"""What is left for workers of some job types, as they ask it to decide whether to
stay (``has_work``), how long to sleep (``seconds_until_due``), and how many jobs no
live worker holds (``unheld_jobs``). Read-only, in the time the coordinator trusts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from sqlalchemy import Row, and_, func, or_, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import job_prerequisites, jobs
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs import hot_path
from photo_pipeline.jobs.states import ACTIVE_STATES, CLAIMABLE_STATES, LEASED_STATES
from photo_pipeline.jobs.store import JobStore


def unheld_jobs(store: JobStore, job_types: Sequence[str]) -> int:
    """How many jobs of ``job_types`` may still run but are held by no live worker:
    queued (delayed or waiting on prerequisites too), retry_queued, or leased with an
    expired lease."""
    types = check.job_types(job_types)
    now = store.clock.sql()
    query = select(func.count()).where(
        jobs.c.job_type.in_(types),
        or_(
            jobs.c.state.in_(CLAIMABLE_STATES),
            and_(jobs.c.state.in_(LEASED_STATES), jobs.c.lease_expires_at < now),
        ),
    )
    with read_session(store.session_factory) as session:
        return session.scalar(query) or 0


def seconds_until_due(store: JobStore, job_types: Sequence[str]) -> float | None:
    """Seconds until the next job of ``job_types`` becomes runnable by time (a delayed
    job, a retry's backoff) or a lease of theirs expires (to recover); None when
    there is neither. Negative when overdue."""
    types = check.job_types(job_types)
    next_run = (
        select(func.min(jobs.c.run_after))
        .where(hot_path.CLAIMABLE, jobs.c.job_type.in_(types))
        .scalar_subquery()
    )
    next_expiry = (
        select(func.min(jobs.c.lease_expires_at))
        .where(jobs.c.state.in_(LEASED_STATES), jobs.c.job_type.in_(types))
        .scalar_subquery()
    )
    with read_session(store.session_factory) as session:
        run_at, expires_at, now = session.execute(
            select(next_run, next_expiry, store.clock.sql())
        ).one()
    due = [t for t in (run_at, expires_at) if t is not None]
    return None if not due else (min(due) - now).total_seconds()


def has_work(store: JobStore, job_types: Sequence[str], *, within: timedelta) -> bool:
    """Whether a burst worker of ``job_types`` should stay: one of its jobs can run
    now (or within ``within``), has a lease that expired (to recover), or waits on
    prerequisites of which one, down the chain, is leased or can run by then. A job
    delayed beyond ``within``, and whatever waits on it, does not count."""
    types = set(check.job_types(job_types))
    with read_session(store.session_factory) as session:
        now = store.clock.now(session)
        due = now + within
        active = {
            row.id: row
            for row in session.execute(
                select(
                    jobs.c.id,
                    jobs.c.job_type,
                    jobs.c.state,
                    jobs.c.waiting_for,
                    jobs.c.run_after,
                    jobs.c.lease_expires_at,
                ).where(jobs.c.state.in_(ACTIVE_STATES))
            )
        }
        waiting = [
            r.id
            for r in active.values()
            if r.job_type in types and r.state in CLAIMABLE_STATES and r.waiting_for > 0
        ]
        edges: dict[str, list[str]] = {}
        if waiting:
            for edge in session.execute(
                select(job_prerequisites).where(job_prerequisites.c.job_id.in_(list(active)))
            ):
                edges.setdefault(edge.job_id, []).append(edge.prerequisite_id)

    def runnable(row: Row[*tuple[Any, ...]]) -> bool:
        return row.state in CLAIMABLE_STATES and row.waiting_for == 0 and row.run_after <= due

    for row in active.values():
        if row.job_type in types and (
            runnable(row) or (row.state in LEASED_STATES and row.lease_expires_at < now)
        ):
            return True

    seen: set[str] = set()

    def moving(job_id: str) -> bool:
        """A prerequisite that is leased or runnable, or waits on one."""
        if job_id in seen or job_id not in active:
            return False  # finished prerequisites no longer hold anything up
        seen.add(job_id)
        row = active[job_id]
        if row.state in LEASED_STATES or runnable(row):
            return True
        return row.run_after <= due and any(moving(p) for p in edges.get(job_id, []))

    return any(
        active[job_id].run_after <= due and any(moving(p) for p in edges.get(job_id, []))
        for job_id in waiting
    )
