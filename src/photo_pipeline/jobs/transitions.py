"""State changes as written: one job row moved to a new state with its side effects
(items, events, dependents), inside the caller's transaction and row lock."""

from __future__ import annotations

import random
from datetime import datetime
from typing import Any

from sqlalchemy import Row, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.schema import job_items, job_prerequisites, jobs
from photo_pipeline.db.text import storable
from photo_pipeline.jobs import wakeup
from photo_pipeline.jobs.errors import InvalidTransition, JobConflict
from photo_pipeline.jobs.events import Event, write_event, write_events
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.rows import JobSnapshot, lock_job, snapshot
from photo_pipeline.jobs.states import (
    ACTIVE_STATES,
    CLAIMABLE_STATES,
    FINISHED_STATES,
    LEASED_STATES,
    ItemState,
    JobState,
)


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
        interrupted: bool = False,
    ) -> JobSnapshot:
        """Write ``row -> target`` with its side effects, conditional on the row being
        exactly as read. The caller holds the row lock and has validated the move.

        ``failed`` with ``release`` hands the job back (attempt refunded, runs at
        once); with ``interrupted`` (an infrastructure failure) the attempt is
        refunded too and one interruption counted, retried after the backoff of
        that count until ``max_interruptions`` run out."""
        values: dict[str, Any] = {"state": target, "updated_at": now}
        if error is not None:
            error = (error[0], storable(error[1]))
            values["error_code"], values["error_message"] = error
        events: list[tuple[str, str | None]] = [(f"state:{target}", error[1] if error else None)]
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
            elif interrupted:
                interruptions = row.interruptions + 1
                values.update(attempts=row.attempts - 1, interruptions=interruptions)
                if not cancelled and interruptions < self._retry_policy.max_interruptions:
                    target = values["state"] = JobState.RETRY_QUEUED
                    run_after = now + self._retry_policy.delay(interruptions, self._rng)
                    values["run_after"] = run_after
                    events.append((f"state:{target}", f"retry at {run_after.isoformat()}"))
            elif retry and not cancelled and row.attempts < row.max_attempts:
                target = values["state"] = JobState.RETRY_QUEUED
                run_after = now + self._retry_policy.delay(row.attempts, self._rng)
                values["run_after"] = run_after
                events.append((f"state:{target}", f"retry at {run_after.isoformat()}"))
        if target is JobState.RETRY_QUEUED and row.state == JobState.FAILED:
            # A manual retry grants one more attempt, a fresh interruption budget, and
            # runs as soon as possible.
            values.update(max_attempts=max(row.max_attempts, row.attempts + 1), run_after=now)
            values.update(error_code=None, error_message=None, interruptions=0)
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
        written: list[Event] = [(row.id, kind, message, None) for kind, message in events]
        if target in CLAIMABLE_STATES and result.waiting_for == 0:
            # Runnable now, or after a backoff that idle workers then wait for.
            wakeup.runnable(session, [result.job_type])
        if row.has_dependents and target is JobState.SUCCEEDED:
            # The job's events and its released dependents' in one insert.
            self.release_dependents(session, row.id, now, events=written)
            return snapshot(result)
        write_events(session, written, now)
        if row.has_dependents and target in (JobState.FAILED, JobState.CANCELLED):
            self._cancel_dependents(session, row.id, now)
        elif row.has_dependents and target is JobState.RETRY_QUEUED:
            self._revive_dependents(session, row.id, now)
        return snapshot(result)

    def release_dependents(
        self, session: Session, job_id: str, now: datetime, *, events: list[Event] | None = None
    ) -> None:
        """A prerequisite succeeded: the jobs waiting on it wait for one fewer; those
        left waiting for none become runnable (and wake workers). Their events are
        written after ``events`` (the prerequisite's own), by one insert."""
        dependents = select(job_prerequisites.c.job_id).where(
            job_prerequisites.c.prerequisite_id == job_id
        )
        released = session.execute(
            update(jobs)
            .where(jobs.c.id.in_(dependents), jobs.c.waiting_for > 0)
            .values(waiting_for=jobs.c.waiting_for - 1, version=jobs.c.version + 1)
            .returning(jobs.c.id, jobs.c.waiting_for, jobs.c.job_type)
        ).all()
        ready = sorted((d.id, d.job_type) for d in released if d.waiting_for == 0)
        met: list[Event] = [
            (dependent_id, "prerequisites_met", None, None) for dependent_id, _ in ready
        ]
        write_events(session, [*(events or []), *met], now)
        wakeup.runnable(session, [job_type for _, job_type in ready])

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

    def _revive_dependents(self, session: Session, job_id: str, now: datetime) -> None:
        """A prerequisite that runs again (a retry) queues again the jobs that were
        cancelled because it had failed, and through them theirs, so that retrying
        the scan of an import also brings back its render and similar.

        The one way out of ``cancelled``, and only for that reason: a dependent is
        left alone when another of its prerequisites is still failed or cancelled,
        or when another active job holds its lock by now."""
        dependent_ids = session.scalars(
            select(job_prerequisites.c.job_id)
            .where(job_prerequisites.c.prerequisite_id == job_id)
            .order_by(job_prerequisites.c.job_id)
        ).all()
        for dependent_id in dependent_ids:
            row = lock_job(session, dependent_id)
            if row.state != JobState.CANCELLED or row.error_code != "prerequisite_failed":
                continue
            prerequisite_states = session.scalars(
                select(jobs.c.state)
                .join(job_prerequisites, job_prerequisites.c.prerequisite_id == jobs.c.id)
                .where(job_prerequisites.c.job_id == dependent_id)
            ).all()
            if any(s in (JobState.FAILED, JobState.CANCELLED) for s in prerequisite_states):
                continue
            if row.lock_key is not None and _lock_taken(session, row.lock_key):
                continue
            waiting_for = sum(1 for s in prerequisite_states if s != JobState.SUCCEEDED)
            revived = changed_rows(
                session,
                update(jobs)
                .where(jobs.c.id == row.id, jobs.c.version == row.version)
                .values(
                    state=JobState.QUEUED,
                    waiting_for=waiting_for,
                    run_after=now,
                    error_code=None,
                    error_message=None,
                    finished_at=None,
                    interruptions=0,
                    max_attempts=max(row.max_attempts, row.attempts + 1),
                    updated_at=now,
                    version=jobs.c.version + 1,
                ),
            )
            if revived != 1:
                raise JobConflict("concurrent_update", f"job {row.id} changed while being updated")
            requeue_items(session, row.id, now, [ItemState.CANCELLED])
            if waiting_for == 0:
                wakeup.runnable(session, [row.job_type])
            write_event(
                session,
                row.id,
                f"state:{JobState.QUEUED}",
                now,
                message=f"prerequisite {job_id} retried",
            )
            if row.has_dependents:
                self._revive_dependents(session, row.id, now)


def _lock_taken(session: Session, lock: str) -> bool:
    return (
        session.scalar(
            select(jobs.c.id)
            .where(jobs.c.lock_key == lock, jobs.c.state.in_(ACTIVE_STATES))
            .limit(1)
        )
        is not None
    )


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
