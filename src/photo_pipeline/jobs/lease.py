"""A worker's hold on a job, and the state changes made under it: claim (a lease and
a new fencing token), renew, finish (``transition``), hand back (``release``,
``interrupt``), and ``cancel``, which a lease holder acknowledges by draining.

Every change locks the job's row first and refuses a write from a worker that no
longer holds the job (``check_fence``); the worker's usual claim and finish are one
round trip each (jobs.hot_path)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta
from typing import Any, NamedTuple

from sqlalchemy import Row, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import unique_violation
from photo_pipeline.db.schema import jobs
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs import hot_path
from photo_pipeline.jobs.clock import micros_of
from photo_pipeline.jobs.errors import InvalidArgument, InvalidTransition, JobConflict
from photo_pipeline.jobs.events import Event, write_events
from photo_pipeline.jobs.locks import lock_held
from photo_pipeline.jobs.rows import JobSnapshot, lock_job, require_job, snapshot, snapshot_of
from photo_pipeline.jobs.states import (
    CLAIMABLE_STATES,
    LEASED_STATES,
    JobState,
    can_transition,
)
from photo_pipeline.jobs.store import JobStore


class Claim(NamedTuple):
    """A checked claim request: up to ``limit`` jobs."""

    job_types: list[str]
    worker_id: str
    lease: timedelta
    limit: int = 1

    @classmethod
    def checked(
        cls, job_types: Sequence[str], worker_id: str, lease_seconds: float, limit: int = 1
    ) -> Claim:
        types = check.job_types(job_types)
        worker_id = check.key("worker_id", worker_id)
        lease = timedelta(seconds=check.lease_seconds(lease_seconds))
        return cls(types, worker_id, lease, check.claim_limit(limit))


def claim(store: JobStore, request: Claim) -> list[JobSnapshot]:
    """Lease up to ``limit`` of the most urgent runnable jobs of the claim's types to
    its worker, each with its own lease and fencing token: highest priority, then
    earliest ``run_after``, then enqueue order, in one index-backed statement whose
    events are one insert. They come in that order; none when nothing is runnable."""
    types, worker_id, lease, limit = request
    if store.is_postgresql:
        params = {
            "types": types,
            "worker_id": worker_id,
            "lease_us": micros_of(lease),
            "limit": limit,
        }
        now_sql = store.clock.sql_text(params)
        return [snapshot_of(row) for row in store.run_all(hot_path.pg_claim_text(now_sql), params)]
    now, expires = store.clock.sql(), store.clock.sql(plus=lease)
    with write_session(store.session_factory) as session:
        statement = hot_path.claim_update(types, worker_id, now, expires, limit)
        rows = sorted(session.execute(statement).all(), key=hot_path.claim_order)
        if not rows:
            return []
        write_events(
            session,
            [
                (
                    row.id,
                    "claimed",
                    worker_id,
                    {"fencing_token": row.fencing_token, "attempt": row.attempts},
                )
                for row in rows
            ],
            rows[0].updated_at,
        )
        return [snapshot(row) for row in rows]


def renew_lease(
    store: JobStore,
    job_id: str,
    worker_id: str,
    *,
    lease_seconds: float,
    fencing_token: int | None,
) -> JobState | None:
    """Extend the lease and return the job's state, so that the worker notices a
    cancel request; None when ``worker_id`` no longer holds the job."""
    lease = timedelta(seconds=check.lease_seconds(lease_seconds))
    conditions = [
        jobs.c.id == job_id,
        jobs.c.lease_owner == worker_id,
        jobs.c.state.in_(LEASED_STATES),
    ]
    if fencing_token is not None:
        conditions.append(jobs.c.fencing_token == fencing_token)
    renew = (
        update(jobs)
        .where(*conditions)
        .values(heartbeat_at=store.clock.sql(), lease_expires_at=store.clock.sql(plus=lease))
        .returning(jobs.c.state)
    )
    if store.is_postgresql:
        with store.autocommit() as conn:
            state = conn.scalar(renew)
    else:
        with write_session(store.session_factory) as session:
            state = session.scalar(renew)
    if state is None:
        with read_session(store.session_factory) as session:
            require_job(session, job_id)
        return None
    return JobState(state)


def holds_lease(store: JobStore, job_id: str, worker_id: str, fencing_token: int) -> bool:
    """Whether ``worker_id`` still holds the job under ``fencing_token`` (the job
    running or cancelling): read now, not at the last heartbeat."""
    held = select(jobs.c.id).where(
        jobs.c.id == job_id,
        jobs.c.lease_owner == worker_id,
        jobs.c.fencing_token == fencing_token,
        jobs.c.state.in_(LEASED_STATES),
    )
    with read_session(store.session_factory) as session:
        return session.scalar(held) is not None


def transition(
    store: JobStore,
    job_id: str,
    to_state: str,
    *,
    worker_id: str | None,
    fencing_token: int | None,
    error: tuple[str, str] | None,
    retry: bool,
) -> JobSnapshot:
    """Move a job to ``to_state``; a worker passes its ``fencing_token``.

    ``failed`` with attempts left (and ``retry``) re-queues the job with backoff in
    the same step, so the result's state is then ``retry_queued``. Another active job
    having taken the lock of a job made active again raises ``lock_held``.
    """
    target = check.job_state(to_state)
    error = check.error(error)
    if target is JobState.RUNNING:
        raise InvalidTransition("invalid_transition", "a job becomes running only through claim()")
    if target is JobState.SUCCEEDED and fencing_token is not None and error is None:
        done = succeed(store, job_id, fencing_token, worker_id)
        if done is not None:
            return done
        # Some check failed: the general path below names it (or, the job having
        # changed meanwhile, applies the move).
    with write_session(store.session_factory) as session:
        now = store.clock.now(session)
        row = lock_job(session, job_id)
        check_fence(row, fencing_token, worker_id)
        if not can_transition(row.state, target):
            raise InvalidTransition(
                "invalid_transition",
                f"job {job_id} is {row.state}: {row.state} -> {target} is not allowed",
            )
        try:
            return store.transitions.apply(session, row, target, now, error=error, retry=retry)
        except IntegrityError as exc:
            # Re-activating a job whose lock another job took meanwhile (pg-boss #535).
            if unique_violation(exc) == "uq_jobs_active_lock":
                raise lock_held(store, row.lock_key) from exc
            raise


def succeed(store: JobStore, job_id: str, token: int, worker_id: str | None) -> JobSnapshot | None:
    """The worker's usual finish in one round trip; None when a check failed."""
    if store.is_postgresql:
        params = {"job_id": job_id, "token": token, "worker_id": worker_id}
        now_sql = store.clock.sql_text(params)
        statement = hot_path.pg_succeed(now_sql, check_owner=worker_id is not None)
        row = store.run_one(statement, params)
        return None if row is None else snapshot_of(row)
    with write_session(store.session_factory) as session:
        return _succeed_in(store, session, job_id, token, worker_id)


def succeed_many(store: JobStore, tokens: list[tuple[str, int]]) -> dict[str, JobSnapshot]:
    """``succeed`` of many leased jobs ``(job_id, fencing_token)`` with one commit
    (jobs.group_commit); returns those that succeeded, by id. A job whose check
    failed is left as it was."""
    if not tokens:
        return {}
    if store.is_postgresql:
        params: dict[str, Any] = {"ids": [i for i, _ in tokens], "tokens": [t for _, t in tokens]}
        now_sql = store.clock.sql_text(params)
        rows = store.run_all(hot_path.pg_succeed_many(now_sql), params)
        return {job["id"]: job for job in map(snapshot_of, rows)}
    done: dict[str, JobSnapshot] = {}
    with write_session(store.session_factory) as session:
        for job_id, token in tokens:
            job = _succeed_in(store, session, job_id, token, None)
            if job is not None:
                done[job_id] = job
    return done


def _succeed_in(
    store: JobStore, session: Session, job_id: str, token: int, worker_id: str | None
) -> JobSnapshot | None:
    """SQLite: ``succeed`` in the caller's write transaction."""
    row = session.execute(
        hot_path.succeed_update(job_id, token, worker_id, store.clock.sql())
    ).one_or_none()
    if row is None:
        return None
    now = row.updated_at
    done: list[Event] = [(job_id, f"state:{JobState.SUCCEEDED}", None, None)]
    if row.has_dependents:  # read by the update: no statement when there are none
        store.transitions.release_dependents(session, job_id, now, events=done)
    else:
        write_events(session, done, now)
    return snapshot(row)


def release(store: JobStore, job_id: str, *, fencing_token: int, reason: str) -> JobSnapshot:
    """Hand a leased job back to the queue without spending an attempt (a worker
    shutting down): it becomes ``retry_queued``, runnable at once, its running items
    queued again. A job being cancelled is cancelled instead."""
    return _hand_back(store, job_id, fencing_token, ("released", reason), release=True)


def interrupt(
    store: JobStore, job_id: str, *, fencing_token: int, error: tuple[str, str]
) -> JobSnapshot:
    """Hand a leased job back after an infrastructure failure (e.g. the database went
    away under it): the attempt refunded, one interruption counted, as when a worker
    dies. A job being cancelled is cancelled instead."""
    checked = check.error(error)
    if checked is None:
        raise InvalidArgument("invalid_error", "an interruption needs (code, message)")
    return _hand_back(store, job_id, fencing_token, checked, interrupted=True)


def _hand_back(
    store: JobStore, job_id: str, fencing_token: int, error: tuple[str, str], **how: bool
) -> JobSnapshot:
    """The leased job failed with ``error`` and ``how`` (``release``/``interrupted``:
    the attempt refunded); a job being cancelled is cancelled instead."""
    with write_session(store.session_factory) as session:
        now = store.clock.now(session)
        row = lock_job(session, job_id)
        check_fence(row, fencing_token)
        if row.state == JobState.CANCELLING:
            cancelled = ("cancelled", "cancelled on request")
            return store.transitions.apply(session, row, JobState.CANCELLED, now, error=cancelled)
        return store.transitions.apply(session, row, JobState.FAILED, now, error=error, **how)


def cancel(store: JobStore, job_id: str, *, reason: str | None) -> JobSnapshot:
    """Queued work is cancelled at once; running work drains through ``cancelling``,
    which its lease holder acknowledges. A job already cancelling is left as it is."""
    error = ("cancelled", reason or "cancelled on request")
    with write_session(store.session_factory) as session:
        now = store.clock.now(session)
        row = lock_job(session, job_id)
        state = JobState(row.state)
        if state is JobState.CANCELLING:
            return snapshot(row)
        if state in CLAIMABLE_STATES:
            return store.transitions.apply(session, row, JobState.CANCELLED, now, error=error)
        if state is JobState.RUNNING:
            return store.transitions.apply(session, row, JobState.CANCELLING, now, error=error)
        raise InvalidTransition("invalid_transition", f"cannot cancel a {state} job")


def check_fence(row: Row[Any], fencing_token: int | None, worker_id: str | None = None) -> None:
    """Refuse a write from a worker that no longer holds the job."""
    if fencing_token is not None:
        if row.fencing_token != fencing_token:
            raise JobConflict(
                "stale_fencing_token",
                f"job {row.id}: fencing token {fencing_token} is stale "
                f"(current {row.fencing_token})",
            )
        if row.state not in LEASED_STATES:
            raise JobConflict("lease_lost", f"job {row.id} is {row.state}, no longer leased")
    if worker_id is not None and row.lease_owner not in (None, worker_id):
        raise JobConflict("not_lease_owner", f"job {row.id} is held by {row.lease_owner}")
