"""State changes as written: one job row moved to a new state with its side effects
(items, events, dependents), inside the caller's transaction and row lock."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from sqlalchemy import Row, Select, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import job_items, job_prerequisites, jobs
from photo_pipeline.jobs.errors import InvalidTransition, JobConflict, JobNotFound
from photo_pipeline.jobs.events import write_event
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.states import (
    CLAIMABLE_STATES,
    FINISHED_STATES,
    LEASED_STATES,
    ItemState,
    JobState,
)

JobSnapshot = dict[str, Any]


class Transitions:
    """Applies validated state changes; knows the retry policy for automatic retries."""

    def __init__(self, retry_policy: RetryPolicy, rng: random.Random) -> None:
        self._retry_policy = retry_policy
        self._rng = rng

    def apply(
        self,
        session: Session,
        row: Row[Any],
        target: JobState,
        now: datetime,
        *,
        error: tuple[str, str] | None = None,
        retry: bool = True,
        release: bool = False,
    ) -> JobSnapshot:
        """Write ``row -> target`` with its side effects, conditional on the row being
        exactly as read. The caller holds the row lock and has validated the move."""
        values: dict[str, Any] = {"state": target, "updated_at": now}
        events: list[tuple[str, str | None]] = [(f"state:{target}", error[1] if error else None)]
        if error is not None:
            values["error_code"], values["error_message"] = error
        if target is JobState.CANCELLING and row.lease_owner is None:
            # Nobody holds the job, so nobody would acknowledge: finish the cancel now.
            target = values["state"] = JobState.CANCELLED
            events.append((f"state:{target}", None))
        if target is JobState.SUCCEEDED and row.items_pending:
            raise InvalidTransition(
                "items_pending", f"job {row.id} cannot succeed while items are unfinished"
            )
        if target is JobState.FAILED:
            requeue_items(session, row.id, now, [ItemState.RUNNING])
            cancelled = row.state == JobState.CANCELLING
            if release:
                # Handed back, not failed: the attempt is refunded and it runs at once.
                target = values["state"] = JobState.RETRY_QUEUED
                values.update(run_after=now, attempts=row.attempts - 1)
                events.append((f"state:{target}", "released"))
            elif retry and not cancelled and row.attempts < row.max_attempts:
                target = values["state"] = JobState.RETRY_QUEUED
                run_after = now + self._retry_policy.delay(row.attempts, self._rng)
                values["run_after"] = run_after
                events.append((f"state:{target}", f"retry at {run_after.isoformat()}"))
        if target is JobState.RETRY_QUEUED and row.state == JobState.FAILED:
            # A manual retry grants one more attempt and runs as soon as possible.
            values.update(max_attempts=max(row.max_attempts, row.attempts + 1), run_after=now)
            values.update(error_code=None, error_message=None)
        if target is JobState.CANCELLED:
            cancel_items(session, row.id, now)
        if target in FINISHED_STATES:
            values["finished_at"] = now
        else:
            values["finished_at"] = None
        if target not in LEASED_STATES:
            values.update(lease_owner=None, lease_expires_at=None)
        result = session.execute(
            update(jobs)
            .where(jobs.c.id == row.id, jobs.c.state == row.state, jobs.c.version == row.version)
            .values(version=jobs.c.version + 1, **values)
            .returning(*jobs.c)
        ).one_or_none()
        if result is None:
            raise JobConflict("concurrent_update", f"job {row.id} changed while being updated")
        for event_type, message in events:
            write_event(session, row.id, event_type, now, message=message)
        if row.has_dependents and target is JobState.SUCCEEDED:
            self._release_dependents(session, row.id, now)
        elif row.has_dependents and target in (JobState.FAILED, JobState.CANCELLED):
            self._cancel_dependents(session, row.id, now)
        return snapshot(result)

    def _release_dependents(self, session: Session, job_id: str, now: datetime) -> None:
        dependents = select(job_prerequisites.c.job_id).where(
            job_prerequisites.c.prerequisite_id == job_id
        )
        released = session.execute(
            update(jobs)
            .where(jobs.c.id.in_(dependents), jobs.c.waiting_for > 0)
            .values(waiting_for=jobs.c.waiting_for - 1, version=jobs.c.version + 1)
            .returning(jobs.c.id, jobs.c.waiting_for)
        ).all()
        for dependent in released:
            if dependent.waiting_for == 0:
                write_event(session, dependent.id, "prerequisites_met", now)

    def _cancel_dependents(self, session: Session, job_id: str, now: datetime) -> None:
        """A prerequisite that ended without success cancels the jobs waiting on it
        (and, through this same call, theirs)."""
        dependent_ids = session.scalars(
            select(job_prerequisites.c.job_id)
            .where(job_prerequisites.c.prerequisite_id == job_id)
            .order_by(job_prerequisites.c.job_id)
        ).all()
        error = ("prerequisite_failed", f"prerequisite job {job_id} did not succeed")
        for dependent_id in dependent_ids:
            # Lock and read each one now: in a diamond, the cascade through another
            # dependent may have cancelled it already.
            row = lock_job(session, dependent_id)
            if row.state in CLAIMABLE_STATES and row.waiting_for > 0:
                self.apply(session, row, JobState.CANCELLED, now, error=error)


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
    return seq


def requeue_items(session: Session, job_id: str, now: datetime, states: list[ItemState]) -> None:
    session.execute(
        update(job_items)
        .where(job_items.c.job_id == job_id, job_items.c.state.in_(states))
        .values(state=ItemState.QUEUED, updated_at=now)
    )


def cancel_items(session: Session, job_id: str, now: datetime) -> None:
    session.execute(
        update(job_items)
        .where(
            job_items.c.job_id == job_id,
            job_items.c.state.in_([ItemState.QUEUED, ItemState.RUNNING]),
        )
        .values(state=ItemState.CANCELLED, updated_at=now)
    )


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


def snapshot(row: Row[Any]) -> JobSnapshot:
    hidden = ("request_hash", "seq", "items_pending", "has_dependents", "owner_dead")
    return {key: value for key, value in row._mapping.items() if key not in hidden}
