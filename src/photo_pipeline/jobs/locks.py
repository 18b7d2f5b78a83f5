"""The one-mutating-job lock: which active jobs hold a lock, and the ``lock_held``
error that names them. The lock itself is the unique index ``uq_jobs_active_lock``
(one active job per ``lock_key``), so taking it needs no statement of its own."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import jobs
from photo_pipeline.jobs.errors import LockHeld
from photo_pipeline.jobs.states import ACTIVE_STATES
from photo_pipeline.jobs.store import JobStore


def blockers(store: JobStore, lock: str) -> list[dict[str, Any]]:
    """Active jobs holding ``lock``."""
    with read_session(store.session_factory) as session:
        held = session.execute(
            select(jobs.c.id, jobs.c.state, jobs.c.job_type).where(
                jobs.c.lock_key == lock, jobs.c.state.in_(ACTIVE_STATES)
            )
        )
        return [{"id": r.id, "state": r.state, "job_type": r.job_type} for r in held]


def lock_held(store: JobStore, lock: str | list[str]) -> LockHeld:
    """``lock_held`` naming the holder (of the first of ``lock`` that has one)."""
    locks = [lock] if isinstance(lock, str) else lock
    lock, found = locks[0], []
    for candidate in locks:
        found = blockers(store, candidate)
        if found:
            lock = candidate
            break
    holders = ", ".join(f"{b['id']} ({b['state']})" for b in found)
    return LockHeld(
        f"lock {lock!r} is held by job {holders or 'another job'}",
        lock=lock,
        blocking_jobs=[b["id"] for b in found],
    )
