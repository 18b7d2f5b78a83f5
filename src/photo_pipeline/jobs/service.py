"""JobService — the durable job coordinator (no execution: that is the worker's job).

It enqueues with idempotency keys and one-mutating-job locks, hands a queued job to
one worker atomically (claim with a fencing token), tracks heartbeats and leases,
validates every state change, derives progress from durable item rows, cancels,
retries with backoff, and recovers jobs whose worker vanished.

Concurrency rule: every change to a job, its items or its events happens in one write
transaction that first locks the job's row (``SELECT … FOR UPDATE`` on PostgreSQL;
``BEGIN IMMEDIATE`` serialises writers on SQLite) and then writes with a conditional
``UPDATE … WHERE state = :seen AND version = :seen``. A write that matches no row
raises; nothing is decided on stale reads.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Connection,
    Engine,
    Row,
    and_,
    delete,
    func,
    literal,
    or_,
    select,
    update,
)
from sqlalchemy.engine import URL
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional, unique_violation
from photo_pipeline.db.schema import (
    EPOCH,
    UTCDateTime,
    job_events,
    job_items,
    job_prerequisites,
    jobs,
    workers,
)
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs import enqueue as enqueuing
from photo_pipeline.jobs import hot_path, wakeup
from photo_pipeline.jobs.clock import Clock, db_now, db_now_sql, utc_now
from photo_pipeline.jobs.enqueue import Enqueued
from photo_pipeline.jobs.errors import (
    InvalidArgument,
    InvalidTransition,
    JobBlocked,
    JobConflict,
)
from photo_pipeline.jobs.events import event_dict, write_event
from photo_pipeline.jobs.hot_path import claim_candidate
from photo_pipeline.jobs.items import ItemUpdate, apply_item_updates, normalise_updates
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.rows import JobSnapshot, job_with_facts, lock_job, require_job, snapshot
from photo_pipeline.jobs.states import (
    ACTIVE_STATES,
    CLAIMABLE_STATES,
    FINISHED_STATES,
    ITEM_DONE_STATES,
    LEASED_STATES,
    TERMINAL_STATES,
    ItemState,
    JobState,
    WorkerState,
    can_transition,
)
from photo_pipeline.jobs.transitions import Transitions

_RECOVERY_BATCH = 200


class JobService:
    """The coordinator. Thread-safe; one instance per process is enough."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        clock: Clock | None = None,
        retry_policy: RetryPolicy | None = None,
        recover_every: timedelta | None = timedelta(seconds=5),
        rng: random.Random | None = None,
    ) -> None:
        self._session_factory = session_factory
        # Without a clock (production) leases, expiry, backoff and recovery use the
        # database's time; a clock given (tests) is used instead. ``_clock`` also
        # stamps what only people read (item and event times) without a round trip.
        self._fixed_clock = clock is not None
        self._clock: Clock = clock or utc_now
        # claim() runs recover_stale() at most this often, so recovery needs no cron.
        self._recover_every = recover_every
        self._last_recovery: float | None = None
        self._transitions = Transitions(retry_policy or RetryPolicy(), rng or random.Random())
        self._engine: Engine = session_factory.kw["bind"]
        self._dialect = self._engine.dialect
        self._pg = self._dialect.name == "postgresql"

    @property
    def session_factory(self) -> sessionmaker[Session]:
        return self._session_factory

    @property
    def is_postgresql(self) -> bool:
        return self._pg

    @property
    def database_url(self) -> URL:
        return self._engine.url

    @property
    def database_key(self) -> str:
        """Names this database for in-process wake-ups (jobs.wakeup)."""
        return wakeup.database_key(self._engine)

    # ── enqueue ────────────────────────────────────────────────────────────────
    def enqueue(
        self,
        job_type: str,
        *,
        lock: str | None = None,
        idempotency_key: str | None = None,
        items: Iterable[str] = (),
        params: dict[str, Any] | None = None,
        priority: int = 0,
        run_after: datetime | None = None,
        max_attempts: int = 3,
        prerequisites: Iterable[str] = (),
    ) -> JobSnapshot:
        """Queue a job. The same ``idempotency_key`` with the same request returns the
        original job; with a different request it raises ``idempotency_conflict``."""
        return self.submit(
            job_type,
            lock=lock,
            idempotency_key=idempotency_key,
            items=items,
            params=params,
            priority=priority,
            run_after=run_after,
            max_attempts=max_attempts,
            prerequisites=prerequisites,
        ).job

    def submit(
        self,
        job_type: str,
        *,
        lock: str | None = None,
        idempotency_key: str | None = None,
        items: Iterable[str] = (),
        params: dict[str, Any] | None = None,
        priority: int = 0,
        run_after: datetime | None = None,
        max_attempts: int = 3,
        prerequisites: Iterable[str] = (),
    ) -> Enqueued:
        """``enqueue`` that also says whether the job is new (``created``) or the
        original job of an idempotent replay (an HTTP API answers 201 or 200)."""
        checked = enqueuing.request(
            job_type,
            lock=lock,
            idempotency_key=idempotency_key,
            items=items,
            params=params,
            priority=priority,
            run_after=run_after,
            max_attempts=max_attempts,
            prerequisites=prerequisites,
        )
        return self._submit([checked])[0]

    def enqueue_many(self, jobs_: Iterable[Mapping[str, Any]]) -> list[JobSnapshot]:
        """Queue many jobs in one transaction, all or none: each mapping holds
        ``enqueue``'s arguments by name (``job_type``, ``lock``, ``idempotency_key``,
        ``items``, ``prerequisites``…), checked and refused as ``enqueue`` does.
        Returns the jobs in order (the original job for an idempotent replay)."""
        return [queued.job for queued in self.submit_many(jobs_)]

    def submit_many(self, jobs_: Iterable[Mapping[str, Any]]) -> list[Enqueued]:
        """``enqueue_many`` that also says which jobs are new."""
        return self._submit(enqueuing.requests(jobs_))

    @transactional
    def _submit(self, batch: list[enqueuing.Request]) -> list[Enqueued]:
        if not batch:
            return []
        keyed = any(r.idempotency_key is not None for r in batch)
        for attempt in (1, 2):
            try:
                with write_session(self._session_factory) as session:
                    now = self._now(session)
                    results = enqueuing.write_batch(session, batch, now)
                    self._signal_runnable(session, [q.job for q in results if q.created], now)
                break
            except IntegrityError as exc:
                # A concurrent enqueue with one of our idempotency keys committed
                # first (PostgreSQL may report the lock index if it checked that one
                # first): once more, and its job is a replay.
                if keyed and attempt == 1:
                    continue
                held = [r.lock for r in batch if r.lock is not None]
                if held and unique_violation(exc) == "uq_jobs_active_lock":
                    raise self._lock_held(held) from exc
                raise
        return results

    @transactional
    def add_items(
        self, job_id: str, item_keys: Iterable[str], *, fencing_token: int | None = None
    ) -> int:
        """Add items to a job (e.g. files a scan discovers); keys already present are
        ignored. Returns how many were new."""
        keys = check.item_keys(item_keys)
        with write_session(self._session_factory) as session:
            now = self._now(session)
            row = lock_job(session, job_id)
            _check_fence(row, fencing_token)
            if JobState(row.state) not in ACTIVE_STATES:
                raise InvalidTransition(
                    "invalid_transition", f"cannot add items to a {row.state} job"
                )
            existing = (
                set(
                    session.scalars(
                        select(job_items.c.item_key).where(
                            job_items.c.job_id == job_id, job_items.c.item_key.in_(keys)
                        )
                    )
                )
                if keys
                else set()
            )
            new = [k for k in keys if k not in existing]
            enqueuing.insert_items(session, job_id, new, now)
            if new:
                write_event(session, job_id, "items_added", now, data={"count": len(new)})
            return len(new)

    # ── claim / lease ──────────────────────────────────────────────────────────
    @transactional
    def claim(
        self, job_types: Sequence[str], worker_id: str, *, lease_seconds: float = 60
    ) -> JobSnapshot | None:
        """Lease the most urgent runnable job of ``job_types`` to ``worker_id``.

        One index-backed statement: highest priority, then earliest ``run_after``,
        then enqueue order. Returns None when nothing is runnable.
        """
        types = check.job_types(job_types)
        worker_id = check.key("worker_id", worker_id)
        lease = timedelta(seconds=check.lease_seconds(lease_seconds))
        self._recover_if_due()
        if self._pg:
            params = {"types": types, "worker_id": worker_id, "lease_us": _micros_of(lease)}
            now_sql = self._now_text(params)
            with self._autocommit() as conn:
                row = conn.execute(hot_path.pg_claim_text(now_sql), params).one_or_none()
            return None if row is None else snapshot(row)
        now, expires = self._now_sql(), self._now_sql(plus=lease)
        with write_session(self._session_factory) as session:
            row = session.execute(
                hot_path.claim_update(types, worker_id, now, expires)
            ).one_or_none()
            if row is None:
                return None
            write_event(
                session,
                row.id,
                "claimed",
                row.updated_at,
                message=worker_id,
                data={"fencing_token": row.fencing_token, "attempt": row.attempts},
            )
            return snapshot(row)

    def heartbeat(
        self,
        job_id: str,
        worker_id: str,
        *,
        lease_seconds: float = 60,
        fencing_token: int | None = None,
    ) -> bool:
        """Extend the lease; False when ``worker_id`` no longer holds the job."""
        renewed = self.renew_lease(
            job_id, worker_id, lease_seconds=lease_seconds, fencing_token=fencing_token
        )
        return renewed is not None

    @transactional
    def renew_lease(
        self,
        job_id: str,
        worker_id: str,
        *,
        lease_seconds: float = 60,
        fencing_token: int | None = None,
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
            .values(heartbeat_at=self._now_sql(), lease_expires_at=self._now_sql(plus=lease))
            .returning(jobs.c.state)
        )
        if self._pg:
            with self._autocommit() as conn:
                state = conn.scalar(renew)
        else:
            with write_session(self._session_factory) as session:
                state = session.scalar(renew)
        if state is None:
            with read_session(self._session_factory) as session:
                require_job(session, job_id)
            return None
        return JobState(state)

    # ── transitions ────────────────────────────────────────────────────────────
    @transactional
    def transition(
        self,
        job_id: str,
        to_state: str,
        *,
        worker_id: str | None = None,
        fencing_token: int | None = None,
        error: tuple[str, str] | None = None,
        retry: bool = True,
    ) -> JobSnapshot:
        """Move a job to ``to_state``; the worker passes its ``fencing_token``.

        ``failed`` with attempts left (and ``retry``) re-queues the job with backoff in
        the same step, so the result's state is then ``retry_queued``.
        """
        target = _job_state(to_state)
        error = check.error(error)
        if target is JobState.RUNNING:
            raise InvalidTransition(
                "invalid_transition", "a job becomes running only through claim()"
            )
        if target is JobState.SUCCEEDED and fencing_token is not None and error is None:
            done = self._succeed(job_id, fencing_token, worker_id)
            if done is not None:
                return done
            # Some check failed: the general path below names it (or, the job having
            # changed meanwhile, applies the move).
        with write_session(self._session_factory) as session:
            now = self._now(session)
            row = lock_job(session, job_id)
            _check_fence(row, fencing_token, worker_id)
            if not can_transition(row.state, target):
                raise InvalidTransition(
                    "invalid_transition",
                    f"job {job_id} is {row.state}: {row.state} -> {target} is not allowed",
                )
            try:
                return self._transitions.apply(session, row, target, now, error=error, retry=retry)
            except IntegrityError as exc:
                # Re-activating a job whose lock another job took meanwhile (pg-boss #535).
                if unique_violation(exc) == "uq_jobs_active_lock":
                    raise self._lock_held(row.lock_key) from exc
                raise

    def retry(self, job_id: str) -> JobSnapshot:
        """Run a failed job again (one more attempt); refused with ``lock_held`` when
        another active job holds its lock by now."""
        return self.transition(job_id, JobState.RETRY_QUEUED)

    @transactional
    def release(
        self, job_id: str, *, fencing_token: int, reason: str = "worker shutting down"
    ) -> JobSnapshot:
        """Hand a leased job back to the queue without spending an attempt (a worker
        shutting down): it becomes ``retry_queued``, runnable at once, its running
        items queued again. A job being cancelled is cancelled instead."""
        with write_session(self._session_factory) as session:
            now = self._now(session)
            row = lock_job(session, job_id)
            _check_fence(row, fencing_token)
            if row.state == JobState.CANCELLING:
                error = ("cancelled", "cancelled on request")
                return self._transitions.apply(session, row, JobState.CANCELLED, now, error=error)
            return self._transitions.apply(
                session, row, JobState.FAILED, now, error=("released", reason), release=True
            )

    @transactional
    def interrupt(self, job_id: str, *, fencing_token: int, error: tuple[str, str]) -> JobSnapshot:
        """Hand a leased job back after an infrastructure failure (e.g. the database
        went away under it): the attempt is refunded and one interruption counted,
        as when a worker dies. A job being cancelled is cancelled instead."""
        checked = check.error(error)
        if checked is None:
            raise InvalidArgument("invalid_error", "an interruption needs (code, message)")
        error = checked
        with write_session(self._session_factory) as session:
            now = self._now(session)
            row = lock_job(session, job_id)
            _check_fence(row, fencing_token)
            if row.state == JobState.CANCELLING:
                cancelled = ("cancelled", "cancelled on request")
                return self._transitions.apply(
                    session, row, JobState.CANCELLED, now, error=cancelled
                )
            return self._transitions.apply(
                session, row, JobState.FAILED, now, error=error, interrupted=True
            )

    @transactional
    def cancel(self, job_id: str, *, reason: str | None = None) -> JobSnapshot:
        """Cancel: queued work at once; running work drains through ``cancelling``.
        Cancelling a job that is already cancelling changes nothing."""
        error = ("cancelled", reason or "cancelled on request")
        with write_session(self._session_factory) as session:
            now = self._now(session)
            row = lock_job(session, job_id)
            state = JobState(row.state)
            if state is JobState.CANCELLING:
                return snapshot(row)
            if state in CLAIMABLE_STATES:
                return self._transitions.apply(session, row, JobState.CANCELLED, now, error=error)
            if state is JobState.RUNNING:
                return self._transitions.apply(session, row, JobState.CANCELLING, now, error=error)
            raise InvalidTransition("invalid_transition", f"cannot cancel a {state} job")

    # ── items / progress ───────────────────────────────────────────────────────
    def set_item(
        self,
        job_id: str,
        item_key: str,
        state: str,
        *,
        error: tuple[str, str] | None = None,
        fencing_token: int | None = None,
    ) -> None:
        """Set one item's state (see ``set_items`` to batch)."""
        self.set_items(job_id, [(item_key, state, error)], fencing_token=fencing_token)

    @transactional
    def set_items(
        self,
        job_id: str,
        updates: Iterable[ItemUpdate | tuple[str, str] | tuple[str, str, Any]],
        *,
        fencing_token: int | None = None,
        within: Callable[[Session], None] | None = None,
    ) -> JobState:
        """Apply many item changes in one transaction: all or none. Returns the job's
        state, so that a worker notices a cancel request at its next write.

        With ``fencing_token`` the writes are refused (``JobConflict``) unless the
        job is still leased under that token. ``within(session)`` writes the
        handler's own rows in the same transaction, after that check.
        """
        batch = normalise_updates(updates)
        now = self._clock()
        with write_session(self._session_factory) as session:
            row = lock_job(session, job_id)
            _check_fence(row, fencing_token)
            if within is not None:
                within(session)
            if batch and row.state in TERMINAL_STATES:
                # A finished job's items are its record; changing them would leave,
                # say, a succeeded job with queued items for ever.
                raise InvalidTransition(
                    "invalid_transition", f"job {job_id} is {row.state}: its items are final"
                )
            counts = apply_item_updates(session, job_id, batch, now) if batch else {}
            if counts:
                write_event(session, job_id, "items", now, data=counts)
            return JobState(row.state)

    def progress(self, job_id: str) -> dict[str, Any]:
        """Item counts from the durable item rows: total, done, and per state."""
        with read_session(self._session_factory) as session:
            require_job(session, job_id)
        return self.progress_of([job_id])[job_id]

    def progress_of(self, job_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``progress`` of many jobs in one query (unknown ids count as empty)."""
        ids = list(job_ids)
        by_job: dict[str, dict[str, int]] = {job_id: {} for job_id in ids}
        query = (
            select(job_items.c.job_id, job_items.c.state, func.count())
            .where(job_items.c.job_id.in_(ids))
            .group_by(job_items.c.job_id, job_items.c.state)
        )
        with read_session(self._session_factory) as session:
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
        self,
        job_id: str,
        *,
        states: Iterable[str] | None = None,
        after_id: int = 0,
        limit: int = 1000,
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
        with read_session(self._session_factory) as session:
            require_job(session, job_id)
            return [dict(r._mapping) for r in session.execute(query)]

    # ── recovery / retention ───────────────────────────────────────────────────
    @transactional
    def recover_stale(
        self, *, now: datetime | None = None, dead_workers: Iterable[str] = ()
    ) -> list[str]:
        """Recover jobs whose lease expired or whose worker is known to be dead: a
        running job is re-queued (its interrupted items queued again) without
        spending an attempt, after the backoff of its interruption count, or failed
        once ``max_interruptions`` run out; a cancelling job is cancelled. Returns
        the recovered job ids."""
        given = now
        # The registry's dead workers (found gone by any worker) void their leases too.
        owner_dead = or_(
            jobs.c.lease_owner.in_(list(dead_workers)),
            jobs.c.lease_owner.in_(select(workers.c.id).where(workers.c.state == WorkerState.DEAD)),
        )
        recovered: list[str] = []
        while True:
            with write_session(self._session_factory) as session:
                now = given or self._now(session)
                abandoned = or_(jobs.c.lease_expires_at < now, owner_dead)
                stale = session.execute(
                    job_with_facts()
                    .add_columns(owner_dead.label("owner_dead"))
                    .where(jobs.c.state.in_(LEASED_STATES), abandoned)
                    .order_by(jobs.c.lease_expires_at)
                    .limit(_RECOVERY_BATCH)
                    # Rows a live worker is writing right now are skipped, not waited for.
                    .with_for_update(skip_locked=True, of=jobs)
                ).all()
                for row in stale:
                    if row.state == JobState.CANCELLING:
                        error = ("cancelled", "worker vanished while cancelling")
                        self._transitions.apply(session, row, JobState.CANCELLED, now, error=error)
                    else:
                        # Not the handler's fault: the attempt is refunded and one
                        # interruption counted (a crash loop still ends, later).
                        error = (
                            ("worker_died", f"worker {row.lease_owner} is gone")
                            if row.owner_dead
                            else ("lease_expired", f"worker {row.lease_owner} stopped heartbeating")
                        )
                        self._transitions.apply(
                            session, row, JobState.FAILED, now, error=error, interrupted=True
                        )
                    recovered.append(row.id)
            if len(stale) < _RECOVERY_BATCH:
                break
        return recovered

    @transactional
    def prune(self, *, older_than: timedelta, now: datetime | None = None) -> dict[str, int]:
        """Delete finished jobs (with their items and events) that finished more than
        ``older_than`` ago, and older events of other finished jobs. Active jobs and
        their events are never touched."""
        if not isinstance(older_than, timedelta) or older_than < timedelta(0):
            raise InvalidArgument(
                "invalid_older_than", f"older_than must be a timedelta >= 0, got {older_than!r}"
            )
        finished = [s.value for s in FINISHED_STATES]
        with write_session(self._session_factory) as session:
            cutoff = (now or self._now(session)) - older_than
            old_jobs = select(jobs.c.id).where(
                jobs.c.state.in_(finished), jobs.c.finished_at < cutoff
            )
            events = changed_rows(
                session,
                delete(job_events).where(
                    job_events.c.created_at < cutoff,
                    job_events.c.job_id.in_(select(jobs.c.id).where(jobs.c.state.in_(finished))),
                ),
            )
            # Items, events and prerequisite edges go with their job (ON DELETE CASCADE).
            deleted = changed_rows(session, delete(jobs).where(jobs.c.id.in_(old_jobs)))
        return {"jobs": deleted, "events": events}

    # ── queries ────────────────────────────────────────────────────────────────
    def blockers(self, lock: str) -> list[dict[str, Any]]:
        """Active jobs holding ``lock``."""
        with read_session(self._session_factory) as session:
            held = session.execute(
                select(jobs.c.id, jobs.c.state, jobs.c.job_type).where(
                    jobs.c.lock_key == lock, jobs.c.state.in_(ACTIVE_STATES)
                )
            )
            return [{"id": r.id, "state": r.state, "job_type": r.job_type} for r in held]

    def unheld_jobs(self, job_types: Sequence[str]) -> int:
        """How many jobs of ``job_types`` may still run but are held by no live worker:
        queued (delayed or waiting on prerequisites too), retry_queued, or leased
        with an expired lease."""
        types = check.job_types(job_types)
        now = self._now_sql()
        query = select(func.count()).where(
            jobs.c.job_type.in_(types),
            or_(
                jobs.c.state.in_(CLAIMABLE_STATES),
                and_(jobs.c.state.in_(LEASED_STATES), jobs.c.lease_expires_at < now),
            ),
        )
        with read_session(self._session_factory) as session:
            return session.scalar(query) or 0

    def seconds_until_due(self, job_types: Sequence[str]) -> float | None:
        """Seconds until the next job of ``job_types`` becomes runnable by time (a
        delayed job, a retry's backoff) or a lease of theirs expires (to recover);
        None when there is neither. Negative when overdue."""
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
        with read_session(self._session_factory) as session:
            run_at, expires_at, now = session.execute(
                select(next_run, next_expiry, self._now_sql())
            ).one()
        due = [t for t in (run_at, expires_at) if t is not None]
        return None if not due else (min(due) - now).total_seconds()

    def has_work(self, job_types: Sequence[str], *, within: timedelta = timedelta(0)) -> bool:
        """Whether a burst worker of ``job_types`` should stay: one of its jobs can run
        now (or within ``within``), has a lease that expired (to recover), or waits
        on prerequisites of which one, down the chain, is leased or can run by then.
        A job delayed beyond ``within``, and whatever waits on it, does not count."""
        types = set(check.job_types(job_types))
        with read_session(self._session_factory) as session:
            now = self._now(session)
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

    def find_by_idempotency_key(self, key: str) -> JobSnapshot | None:
        with read_session(self._session_factory) as session:
            row = enqueuing.by_idempotency_key(session, key)
            return None if row is None else snapshot(row)

    def get(self, job_id: str) -> JobSnapshot | None:
        with read_session(self._session_factory) as session:
            row = session.execute(select(jobs).where(jobs.c.id == job_id)).one_or_none()
            return None if row is None else snapshot(row)

    def ids_starting_with(self, prefix: str, *, limit: int = 10) -> list[str]:
        """Ids of the jobs whose id starts with ``prefix`` (at most ``limit``, in id
        order), for callers that accept an abbreviated id as git and docker do."""
        limit = check.integer("limit", limit, 1, 1_000)
        # LIKE, not a range: a range's bounds are only right in a bytewise collation.
        query = select(jobs.c.id).where(jobs.c.id.startswith(prefix, autoescape=True))
        with read_session(self._session_factory) as session:
            return list(session.scalars(query.order_by(jobs.c.id).limit(limit)))

    def list_jobs(
        self,
        *,
        states: Iterable[str] | None = None,
        job_types: Iterable[str] | None = None,
        before: str | None = None,
        limit: int = 100,
    ) -> list[JobSnapshot]:
        """Newest jobs first; ``before`` (a job id, e.g. the last of a page) pages on
        to older ones."""
        limit = check.integer("limit", limit, 1, 10_000)
        query = select(jobs).order_by(jobs.c.seq.desc()).limit(limit)
        if states is not None:
            query = query.where(jobs.c.state.in_([_job_state(s) for s in states]))
        if job_types is not None:
            query = query.where(jobs.c.job_type.in_(list(job_types)))
        with read_session(self._session_factory) as session:
            if before is not None:
                query = query.where(jobs.c.seq < require_job(session, before))
            return [snapshot(r) for r in session.execute(query)]

    def prerequisites(self, job_ids: Iterable[str]) -> dict[str, list[str]]:
        """Each job's prerequisites (ids), for showing chains such as scan → render."""
        ids = list(job_ids)
        found: dict[str, list[str]] = {job_id: [] for job_id in ids}
        query = (
            select(job_prerequisites)
            .where(job_prerequisites.c.job_id.in_(ids))
            .order_by(job_prerequisites.c.job_id, job_prerequisites.c.prerequisite_id)
        )
        with read_session(self._session_factory) as session:
            for row in session.execute(query):
                found[row.job_id].append(row.prerequisite_id)
        return found

    def events(self, job_id: str) -> list[dict[str, Any]]:
        """Every stored event of a job, oldest first."""
        return self.events_after(job_id, 0, limit=None)

    def events_after(
        self, job_id: str, after: int = 0, *, limit: int | None = 1000
    ) -> list[dict[str, Any]]:
        """Events with ``seq > after`` in order: the resumable cursor for SSE and
        polling. Per job, ``seq`` is allocated under the job's row lock, so a reader
        never sees a later event before an earlier one commits."""
        query = (
            select(job_events)
            .where(job_events.c.job_id == job_id, job_events.c.seq > after)
            .order_by(job_events.c.seq)
        )
        if limit is not None:
            query = query.limit(check.integer("limit", limit, 1, 100_000))
        with read_session(self._session_factory) as session:
            require_job(session, job_id)
            return [event_dict(e) for e in session.execute(query)]

    # ── internals ──────────────────────────────────────────────────────────────
    def _lock_held(self, lock: str | list[str]) -> JobBlocked:
        """``lock_held`` naming the holder (of the first of ``lock`` that has one)."""
        locks = [lock] if isinstance(lock, str) else lock
        lock, blockers = locks[0], []
        for candidate in locks:
            blockers = self.blockers(candidate)
            if blockers:
                lock = candidate
                break
        holders = ", ".join(f"{b['id']} ({b['state']})" for b in blockers)
        return JobBlocked(
            "lock_held",
            f"lock {lock!r} is held by job {holders or 'another job'}",
            lock=lock,
            blocking_jobs=[b["id"] for b in blockers],
        )

    def _recover_if_due(self) -> None:
        if self._recover_every is None:
            return
        # The given clock's time (tests move it), else this process's monotonic one.
        at = self._clock().timestamp() if self._fixed_clock else time.monotonic()
        last = self._last_recovery
        if last is None or at - last >= self._recover_every.total_seconds() or at < last:
            self._last_recovery = at
            self.recover_stale()

    def _now(self, session: Session) -> datetime:
        """The time decisions are made with: the database's (one short query inside
        the caller's transaction), or the clock this service was given."""
        if self._fixed_clock:
            return self._clock()
        now: datetime | None = session.scalar(select(db_now(self._dialect)))
        if now is None:
            raise RuntimeError("the database returned no time")
        return now

    def _now_sql(self, *, plus: timedelta = timedelta(0)) -> ColumnElement[datetime]:
        """The same time as SQL: the server's, or the given clock's as a parameter."""
        if self._fixed_clock:
            return literal(self._clock() + plus, UTCDateTime())
        return db_now(self._dialect, plus)

    def _now_text(self, params: dict[str, Any]) -> str:
        """The time as SQL text for the hot path's prepared statements: the server's,
        or the given clock's as the ``:now`` parameter (added to ``params``)."""
        if self._fixed_clock:
            params["now"] = _micros(self._clock())
            return "CAST(:now AS bigint)"
        return db_now_sql(self._dialect)

    @contextmanager
    def _autocommit(self) -> Iterator[Connection]:
        """PostgreSQL: a connection on which each statement commits by itself (one
        round trip for a one-statement change, no BEGIN/COMMIT)."""
        with self._engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def _succeed(self, job_id: str, token: int, worker_id: str | None) -> JobSnapshot | None:
        """The worker's usual finish in one round trip; None when a check failed."""
        if self._pg:
            params = {"job_id": job_id, "token": token, "worker_id": worker_id}
            now_sql = self._now_text(params)
            statement = hot_path.pg_succeed(now_sql, check_owner=worker_id is not None)
            with self._autocommit() as conn:
                row = conn.execute(statement, params).one_or_none()
            return None if row is None else snapshot(row)
        with write_session(self._session_factory) as session:
            row = session.execute(
                hot_path.succeed_update(job_id, token, worker_id, self._now_sql())
            ).one_or_none()
            if row is None:
                return None
            now = row.updated_at
            write_event(session, job_id, f"state:{JobState.SUCCEEDED}", now)
            self._transitions.release_dependents(session, job_id, now)
            return snapshot(row)

    def _signal_runnable(
        self, session: Session, queued: Iterable[JobSnapshot], now: datetime
    ) -> None:
        """New jobs wake idle workers (at commit): to claim those runnable now, or to
        wait until a delayed one is due."""
        ready = [j["job_type"] for j in queued if j["waiting_for"] == 0]
        wakeup.runnable(session, ready)


def _job_state(value: str) -> JobState:
    try:
        return JobState(value)
    except ValueError:
        raise InvalidArgument(
            "invalid_state", f"state must be one of {', '.join(JobState)}, got {value!r}"
        ) from None


def _check_fence(row: Row[Any], fencing_token: int | None, worker_id: str | None = None) -> None:
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


def _micros(value: datetime) -> int:
    return _micros_of(value - EPOCH)


def _micros_of(duration: timedelta) -> int:
    return duration // timedelta(microseconds=1)


__all__ = ["Clock", "Enqueued", "JobService", "JobSnapshot", "claim_candidate", "utc_now"]
