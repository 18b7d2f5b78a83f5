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

import hashlib
import random
import uuid
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Row, Select, and_, delete, func, insert, literal, or_, select, text, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional, unique_violation
from photo_pipeline.db.schema import job_events, job_items, job_prerequisites, jobs, workers
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.errors import (
    InvalidArgument,
    InvalidTransition,
    JobBlocked,
    JobConflict,
)
from photo_pipeline.jobs.events import event_dict, write_event
from photo_pipeline.jobs.items import ItemUpdate, apply_item_updates, normalise_updates
from photo_pipeline.jobs.retry import RetryPolicy
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
from photo_pipeline.jobs.transitions import (
    JobSnapshot,
    Transitions,
    job_with_facts,
    lock_job,
    require_job,
    snapshot,
)

Clock = Callable[[], datetime]


# The claim index is partial; both planners use it only when the query repeats its
# predicate literally (a bound parameter cannot prove it).
_CLAIMABLE = text(
    f"jobs.state IN ({', '.join(repr(s.value) for s in sorted(CLAIMABLE_STATES))}) "
    "AND jobs.waiting_for = 0"
)
_RECOVERY_BATCH = 200
_INSERT_CHUNK = 1000


def utc_now() -> datetime:
    return datetime.now(UTC)


class Enqueued(NamedTuple):
    job: JobSnapshot
    created: bool  # False: an idempotent replay returned the original job


class JobService:
    """The coordinator. Thread-safe; one instance per process is enough."""

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        *,
        clock: Clock = utc_now,
        retry_policy: RetryPolicy | None = None,
        recover_every: timedelta | None = timedelta(seconds=5),
        rng: random.Random | None = None,
    ) -> None:
        self._session_factory = session_factory
        self._clock = clock
        # claim() runs recover_stale() at most this often, so recovery needs no cron.
        self._recover_every = recover_every
        self._last_recovery: datetime | None = None
        self._transitions = Transitions(retry_policy or RetryPolicy(), rng or random.Random())
        self._pg = session_factory.kw["bind"].dialect.name == "postgresql"

    @property
    def session_factory(self) -> sessionmaker[Session]:
        return self._session_factory

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

    @transactional
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
        job_type = check.job_type(job_type)
        lock = check.optional_key("lock", lock)
        idempotency_key = check.optional_key("idempotency_key", idempotency_key)
        keys = check.item_keys(items)
        params = check.params(params)
        priority = check.integer("priority", priority, -check.INT32_MAX, check.INT32_MAX)
        max_attempts = check.integer("max_attempts", max_attempts, 1, 1000)
        prereq_ids = sorted(set(check.item_keys(prerequisites)))
        now = self._clock()
        if run_after is not None:
            run_after = check.aware_time("run_after", run_after)
        request_hash = _request_hash(
            job_type, lock, params, keys, prereq_ids, priority, max_attempts
        )
        job_id = str(uuid.uuid4())
        try:
            with write_session(self._session_factory) as session:
                if idempotency_key is not None:
                    existing = self._by_idempotency_key(session, idempotency_key)
                    if existing is not None:
                        return Enqueued(_same_request(existing, request_hash), False)
                waiting_for = self._check_prerequisites(session, prereq_ids)
                row = session.execute(
                    insert(jobs)
                    .values(
                        id=job_id,
                        job_type=job_type,
                        state=JobState.QUEUED,
                        priority=priority,
                        params=params,
                        request_hash=request_hash,
                        lock_key=lock,
                        idempotency_key=idempotency_key,
                        waiting_for=waiting_for,
                        attempts=0,
                        max_attempts=max_attempts,
                        run_after=run_after or now,
                        fencing_token=0,
                        version=1,
                        created_at=now,
                        updated_at=now,
                    )
                    .returning(*jobs.c)
                ).one()
                if prereq_ids:
                    session.execute(
                        insert(job_prerequisites),
                        [{"job_id": job_id, "prerequisite_id": p} for p in prereq_ids],
                    )
                self._insert_items(session, job_id, keys, now)
                write_event(session, job_id, "queued", now, data={"items": len(keys)})
                return Enqueued(snapshot(row), True)
        except IntegrityError as exc:
            violated = unique_violation(exc)
            if idempotency_key is not None:
                # A concurrent enqueue with the same key committed first (PostgreSQL may
                # report the lock index if it checked that one first).
                with read_session(self._session_factory) as session:
                    existing = self._by_idempotency_key(session, idempotency_key)
                if existing is not None:
                    return Enqueued(_same_request(existing, request_hash), False)
            if lock is not None and violated == "uq_jobs_active_lock":
                raise self._lock_held(lock) from exc
            raise

    @transactional
    def add_items(
        self, job_id: str, item_keys: Iterable[str], *, fencing_token: int | None = None
    ) -> int:
        """Add items to a job (e.g. files a scan discovers); keys already present are
        ignored. Returns how many were new."""
        keys = check.item_keys(item_keys)
        now = self._clock()
        with write_session(self._session_factory) as session:
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
            self._insert_items(session, job_id, new, now)
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
        now = self._clock()
        self._recover_if_due(now)
        candidate = claim_candidate(types, now).scalar_subquery()
        with write_session(self._session_factory) as session:
            row = session.execute(
                update(jobs)
                .where(jobs.c.seq == candidate)
                .values(
                    state=JobState.RUNNING,
                    lease_owner=worker_id,
                    lease_expires_at=now + lease,
                    heartbeat_at=now,
                    started_at=func.coalesce(
                        jobs.c.started_at, literal(now, jobs.c.started_at.type)
                    ),
                    fencing_token=jobs.c.fencing_token + 1,
                    attempts=jobs.c.attempts + 1,
                    version=jobs.c.version + 1,
                    updated_at=now,
                )
                .returning(*jobs.c)
            ).one_or_none()
            if row is None:
                return None
            write_event(
                session,
                row.id,
                "claimed",
                now,
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
        now = self._clock()
        conditions = [
            jobs.c.id == job_id,
            jobs.c.lease_owner == worker_id,
            jobs.c.state.in_(LEASED_STATES),
        ]
        if fencing_token is not None:
            conditions.append(jobs.c.fencing_token == fencing_token)
        with write_session(self._session_factory) as session:
            state = session.scalar(
                update(jobs)
                .where(*conditions)
                .values(heartbeat_at=now, lease_expires_at=now + lease)
                .returning(jobs.c.state)
            )
            if state is None:
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
        now = self._clock()
        with write_session(self._session_factory) as session:
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
        now = self._clock()
        with write_session(self._session_factory) as session:
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
        error = check.error(error)
        now = self._clock()
        with write_session(self._session_factory) as session:
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
        now = self._clock()
        error = ("cancelled", reason or "cancelled on request")
        with write_session(self._session_factory) as session:
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
        now = now or self._clock()
        # The registry's dead workers (found gone by any worker) void their leases too.
        owner_dead = or_(
            jobs.c.lease_owner.in_(list(dead_workers)),
            jobs.c.lease_owner.in_(select(workers.c.id).where(workers.c.state == WorkerState.DEAD)),
        )
        abandoned = or_(jobs.c.lease_expires_at < now, owner_dead)
        recovered: list[str] = []
        while True:
            with write_session(self._session_factory) as session:
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
        self._last_recovery = now
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
        cutoff = (now or self._clock()) - older_than
        finished = [s.value for s in FINISHED_STATES]
        with write_session(self._session_factory) as session:
            old_jobs = select(jobs.c.id).where(
                jobs.c.state.in_(finished), jobs.c.finished_at < cutoff
            )
            events = session.execute(
                delete(job_events).where(
                    job_events.c.created_at < cutoff,
                    job_events.c.job_id.in_(select(jobs.c.id).where(jobs.c.state.in_(finished))),
                )
            ).rowcount
            # Items, events and prerequisite edges go with their job (ON DELETE CASCADE).
            deleted = session.execute(delete(jobs).where(jobs.c.id.in_(old_jobs))).rowcount
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
        now = self._clock()
        query = select(func.count()).where(
            jobs.c.job_type.in_(types),
            or_(
                jobs.c.state.in_(CLAIMABLE_STATES),
                and_(jobs.c.state.in_(LEASED_STATES), jobs.c.lease_expires_at < now),
            ),
        )
        with read_session(self._session_factory) as session:
            return session.scalar(query) or 0

    def has_work(self, job_types: Sequence[str], *, within: timedelta = timedelta(0)) -> bool:
        """Whether a burst worker of ``job_types`` should stay: one of its jobs can run
        now (or within ``within``), has a lease that expired (to recover), or waits
        on prerequisites of which one, down the chain, is leased or can run by then.
        A job delayed beyond ``within``, and whatever waits on it, does not count."""
        types = set(check.job_types(job_types))
        due = self._clock() + within
        now = self._clock()
        with read_session(self._session_factory) as session:
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

        def runnable(row: Row[Any]) -> bool:
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
            row = self._by_idempotency_key(session, key)
            return None if row is None else snapshot(row)

    def get(self, job_id: str) -> JobSnapshot | None:
        with read_session(self._session_factory) as session:
            row = session.execute(select(jobs).where(jobs.c.id == job_id)).one_or_none()
            return None if row is None else snapshot(row)

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
    def _check_prerequisites(self, session: Session, prereq_ids: list[str]) -> int:
        """Count the prerequisites still to succeed; refuse unknown or failed ones.

        The rows are share-locked so that none of them can finish between this count
        and our commit (its success would not see our edge and never release us).
        """
        if not prereq_ids:
            return 0
        states = dict(
            session.execute(
                select(jobs.c.id, jobs.c.state)
                .where(jobs.c.id.in_(prereq_ids))
                .order_by(jobs.c.id)  # one lock order for every caller
                .with_for_update(read=True)
            ).all()
        )
        missing = [p for p in prereq_ids if p not in states]
        if missing:
            raise JobBlocked("unknown_prerequisite", f"no job with id {missing[0]!r}")
        dead = [p for p, s in states.items() if s in (JobState.FAILED, JobState.CANCELLED)]
        if dead:
            raise JobBlocked(
                "prerequisite_failed", f"prerequisite job {dead[0]} is {states[dead[0]]}"
            )
        return sum(1 for s in states.values() if s != JobState.SUCCEEDED)

    @staticmethod
    def _insert_items(session: Session, job_id: str, keys: list[str], now: datetime) -> None:
        for start in range(0, len(keys), _INSERT_CHUNK):
            session.execute(
                insert(job_items),
                [
                    {
                        "job_id": job_id,
                        "item_key": key,
                        "state": ItemState.QUEUED,
                        "attempt_count": 0,
                        "updated_at": now,
                    }
                    for key in keys[start : start + _INSERT_CHUNK]
                ],
            )

    @staticmethod
    def _by_idempotency_key(session: Session, key: str) -> Row[Any] | None:
        return session.execute(select(jobs).where(jobs.c.idempotency_key == key)).one_or_none()

    def _lock_held(self, lock: str) -> JobBlocked:
        blockers = self.blockers(lock)
        holders = ", ".join(f"{b['id']} ({b['state']})" for b in blockers)
        return JobBlocked(
            "lock_held",
            f"lock {lock!r} is held by job {holders or 'another job'}",
            lock=lock,
            blocking_jobs=[b["id"] for b in blockers],
        )

    def _recover_if_due(self, now: datetime) -> None:
        last = self._last_recovery
        if self._recover_every is not None and (
            last is None or now - last >= self._recover_every or now < last
        ):
            self.recover_stale(now=now)


def claim_candidate(job_types: list[str], now: datetime) -> Select[tuple[int]]:
    """The next runnable job's ``seq``: a walk of the partial claim index that stops
    at the first row not locked by another claimer."""
    return (
        select(jobs.c.seq)
        .where(_CLAIMABLE, jobs.c.run_after <= now, jobs.c.job_type.in_(job_types))
        .order_by(jobs.c.priority.desc(), jobs.c.run_after, jobs.c.seq)
        .limit(1)
        .with_for_update(skip_locked=True)  # rendered on PostgreSQL only
    )


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


def _request_hash(
    job_type: str,
    lock: str | None,
    params: dict[str, Any],
    items: list[str],
    prerequisites: list[str],
    priority: int,
    max_attempts: int,
) -> str:
    request = {
        "job_type": job_type,
        "lock": lock,
        "params": params,
        "items": items,
        "prerequisites": prerequisites,
        "priority": priority,
        "max_attempts": max_attempts,
    }
    return hashlib.sha256(check.canonical_json(request).encode()).hexdigest()


def _same_request(existing: Row[Any], request_hash: str) -> JobSnapshot:
    if existing.request_hash != request_hash:
        raise JobConflict(
            "idempotency_conflict",
            f"idempotency key {existing.idempotency_key!r} was used for a different request "
            f"(job {existing.id})",
        )
    return snapshot(existing)
