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

This class is the public face and only delegates, to the module of each concern,
where the details are told: ``enqueue`` (with ``inserts``), ``lease`` (claim to
finish; ``hot_path`` and ``transitions`` below it), ``items``, ``recovery``,
``queries``, ``locks`` and ``backlog``.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.engine import URL
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.errors import transactional
from photo_pipeline.jobs import backlog, lease, locks, queries, recovery, wakeup
from photo_pipeline.jobs import enqueue as enqueuing
from photo_pipeline.jobs import items as item_updates
from photo_pipeline.jobs.clock import Clock, TrustedClock, utc_now
from photo_pipeline.jobs.enqueue import Enqueued, Joins, Request
from photo_pipeline.jobs.hot_path import claim_candidate
from photo_pipeline.jobs.items import ItemUpdate
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.rows import JobSnapshot
from photo_pipeline.jobs.states import JobState
from photo_pipeline.jobs.store import JobStore
from photo_pipeline.jobs.transitions import Transitions


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
        transitions = Transitions(retry_policy or RetryPolicy(), rng or random.Random())
        self._store = JobStore(session_factory, clock, transitions)
        # claim() runs recover_stale() at most this often, so recovery needs no cron.
        self._recovery = recovery.RecoverySchedule(recover_every, self._store.clock)

    @property
    def session_factory(self) -> sessionmaker[Session]:
        return self._store.session_factory

    @property
    def clock(self) -> TrustedClock:
        """The time the coordinator decides with (the database's; a test's clock)."""
        return self._store.clock

    @property
    def database_url(self) -> URL:
        return self._store.engine.url

    @property
    def database_key(self) -> str:
        """Names this database for in-process wake-ups (jobs.wakeup)."""
        return wakeup.database_key(self._store.engine)

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
        join_equivalent: bool = False,
    ) -> Enqueued:
        """``enqueue`` that also says whether the job is new (``created``) or the
        original job of an idempotent replay (an HTTP API answers 201 or 200) or, with
        ``join_equivalent``, the same request's job already waiting on the same
        prerequisites (``enqueue.request``)."""
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
            join_equivalent=join_equivalent,
        )
        return self._submit([checked])[0]

    @transactional
    def submit_or_join(
        self,
        job_type: str,
        *,
        lock: str,
        joins: Joins | None = None,
        idempotency_key: str | None = None,
        items: Iterable[str] = (),
        params: dict[str, Any] | None = None,
        priority: int = 0,
        run_after: datetime | None = None,
        max_attempts: int = 3,
        prerequisites: Iterable[str] = (),
    ) -> Enqueued:
        """``submit``, or, while an active job holds ``lock`` and ``joins(job)``
        accepts it (by default: a job of the same type and params), that job with
        ``created`` False; ``LockHeld`` when none does (see ``enqueue.submit_or_join``)."""
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
        return enqueuing.submit_or_join(self._store, checked, joins)

    def replay(
        self,
        idempotency_key: str | None,
        job_type: str,
        params: Mapping[str, Any],
        *,
        fixed_when_queued: Iterable[str] = (),
    ) -> Enqueued | None:
        """The job an earlier request with this key made (see ``enqueue.replay``)."""
        return enqueuing.replay(
            self._store, idempotency_key, job_type, params, fixed_when_queued=fixed_when_queued
        )

    def enqueue_many(self, jobs_: Iterable[Mapping[str, Any]]) -> list[JobSnapshot]:
        """Queue many jobs (mappings of ``enqueue``'s arguments) at once, all or none."""
        return [queued.job for queued in self.submit_many(jobs_)]

    def submit_many(self, jobs_: Iterable[Mapping[str, Any]]) -> list[Enqueued]:
        """``enqueue_many`` that also says which jobs are new."""
        return self._submit(enqueuing.requests(jobs_))

    @transactional
    def _submit(self, batch: list[Request]) -> list[Enqueued]:
        return enqueuing.submit(self._store, batch)

    @transactional
    def add_items(
        self, job_id: str, item_keys: Iterable[str], *, fencing_token: int | None = None
    ) -> int:
        """Add items to a job (e.g. files a scan discovers); returns how many were new."""
        return enqueuing.add_items(self._store, job_id, item_keys, fencing_token=fencing_token)

    # ── claim / lease ──────────────────────────────────────────────────────────
    def claim(
        self, job_types: Sequence[str], worker_id: str, *, lease_seconds: float = 60
    ) -> JobSnapshot | None:
        """Lease the most urgent runnable job of ``job_types`` to ``worker_id``, or None."""
        claimed = self.claim_many(job_types, worker_id, limit=1, lease_seconds=lease_seconds)
        return claimed[0] if claimed else None

    @transactional
    def claim_many(
        self,
        job_types: Sequence[str],
        worker_id: str,
        *,
        limit: int,
        lease_seconds: float = 60,
    ) -> list[JobSnapshot]:
        """Lease up to ``limit`` runnable jobs of ``job_types`` to ``worker_id`` in one
        statement, most urgent first (``claim``'s order), each with its own lease and
        fencing token; empty when none is runnable."""
        request = lease.Claim.checked(job_types, worker_id, lease_seconds, limit)
        if self._recovery.due():
            self.recover_stale()
        return lease.claim(self._store, request)

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
        """``heartbeat`` that returns the job's state (a worker notices a cancel)."""
        return lease.renew_lease(
            self._store, job_id, worker_id, lease_seconds=lease_seconds, fencing_token=fencing_token
        )

    def holds_lease(self, job_id: str, worker_id: str, fencing_token: int) -> bool:
        """Whether ``worker_id`` holds the job under ``fencing_token`` now."""
        return lease.holds_lease(self._store, job_id, worker_id, fencing_token)

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
        """Move a job to ``to_state``; a worker passes its ``fencing_token``."""
        return lease.transition(
            self._store,
            job_id,
            to_state,
            worker_id=worker_id,
            fencing_token=fencing_token,
            error=error,
            retry=retry,
        )

    @transactional
    def succeed_many(self, tokens: Iterable[tuple[str, int]]) -> dict[str, JobSnapshot]:
        """Move many leased jobs ``(job_id, fencing_token)`` to ``succeeded`` with one
        commit, each under its own token and item check; returns those that
        succeeded, by id (the others are as they were: finish them with
        ``transition``, which says why it cannot)."""
        return lease.succeed_many(self._store, [(str(i), int(t)) for i, t in tokens])

    def retry(self, job_id: str) -> JobSnapshot:
        """Run a failed job again (one more attempt), unless another took its lock."""
        return self.transition(job_id, JobState.RETRY_QUEUED)

    @transactional
    def release(
        self, job_id: str, *, fencing_token: int, reason: str = "worker shutting down"
    ) -> JobSnapshot:
        """Hand a leased job back to the queue without spending an attempt."""
        return lease.release(self._store, job_id, fencing_token=fencing_token, reason=reason)

    @transactional
    def interrupt(self, job_id: str, *, fencing_token: int, error: tuple[str, str]) -> JobSnapshot:
        """Hand a leased job back after an infrastructure failure (attempt refunded)."""
        return lease.interrupt(self._store, job_id, fencing_token=fencing_token, error=error)

    @transactional
    def cancel(self, job_id: str, *, reason: str | None = None) -> JobSnapshot:
        """Cancel: queued work at once; running work drains through ``cancelling``."""
        return lease.cancel(self._store, job_id, reason=reason)

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
        """Apply many item changes in one transaction, all or none; returns the job's
        state. ``within(session)`` writes the handler's own rows in it."""
        return item_updates.set_items(
            self._store, job_id, updates, fencing_token=fencing_token, within=within
        )

    def progress(self, job_id: str) -> dict[str, Any]:
        """Item counts from the durable item rows: total, done, and per state."""
        return queries.progress(self._store, job_id)

    def progress_of(self, job_ids: Iterable[str]) -> dict[str, dict[str, Any]]:
        """``progress`` of many jobs in one query (unknown ids count as empty)."""
        return queries.progress_of(self._store, job_ids)

    def items(
        self,
        job_id: str,
        *,
        states: Iterable[str] | None = None,
        after_id: int = 0,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """Items in enqueue order, optionally of some states, paged by ``after_id``."""
        return queries.items(self._store, job_id, states=states, after_id=after_id, limit=limit)

    # ── recovery / retention ───────────────────────────────────────────────────
    @transactional
    def recover_stale(
        self, *, now: datetime | None = None, dead_workers: Iterable[str] = ()
    ) -> list[str]:
        """Hand back the jobs of expired leases and dead workers; returns their ids."""
        return recovery.recover_stale(self._store, now=now, dead_workers=dead_workers)

    @transactional
    def prune(
        self,
        *,
        older_than: timedelta,
        now: datetime | None = None,
        keep_types: Iterable[str] = (),
    ) -> dict[str, int]:
        """Delete jobs finished more than ``older_than`` ago (not those of
        ``keep_types``), and old events."""
        return recovery.prune(self._store, older_than=older_than, now=now, keep_types=keep_types)

    # ── queries ────────────────────────────────────────────────────────────────
    def blockers(self, lock: str) -> list[dict[str, Any]]:
        """Active jobs holding ``lock``."""
        return locks.blockers(self._store, lock)

    def unheld_jobs(self, job_types: Sequence[str]) -> int:
        """How many jobs of ``job_types`` may still run but no live worker holds."""
        return backlog.unheld_jobs(self._store, job_types)

    def seconds_until_due(self, job_types: Sequence[str]) -> float | None:
        """Seconds until the next job of ``job_types`` is due by time (None: none)."""
        return backlog.seconds_until_due(self._store, job_types)

    def has_work(self, job_types: Sequence[str], *, within: timedelta = timedelta(0)) -> bool:
        """Whether a burst worker of ``job_types`` should stay."""
        return backlog.has_work(self._store, job_types, within=within)

    def find_by_idempotency_key(self, key: str) -> JobSnapshot | None:
        return queries.find_by_idempotency_key(self._store, key)

    def get(self, job_id: str) -> JobSnapshot | None:
        return queries.get(self._store, job_id)

    def ids_starting_with(self, prefix: str, *, limit: int = 10) -> list[str]:
        """Ids of the jobs whose id starts with ``prefix`` (an abbreviated id)."""
        return queries.ids_starting_with(self._store, prefix, limit=limit)

    def list_jobs(
        self,
        *,
        states: Iterable[str] | None = None,
        job_types: Iterable[str] | None = None,
        before: str | None = None,
        limit: int = 100,
    ) -> list[JobSnapshot]:
        """Newest jobs first; ``before`` (a job id) pages on to older ones."""
        return queries.list_jobs(
            self._store, states=states, job_types=job_types, before=before, limit=limit
        )

    def prerequisites(self, job_ids: Iterable[str]) -> dict[str, list[str]]:
        """Each job's prerequisites (ids), for showing chains such as scan → render."""
        return queries.prerequisites(self._store, job_ids)

    def events(self, job_id: str) -> list[dict[str, Any]]:
        """Every stored event of a job, oldest first."""
        return self.events_after(job_id, 0, limit=None)

    def events_after(
        self, job_id: str, after: int = 0, *, limit: int | None = 1000
    ) -> list[dict[str, Any]]:
        """Events with ``seq > after`` in order: the resumable cursor for SSE, polling."""
        return queries.events_after(self._store, job_id, after, limit=limit)


__all__ = ["Clock", "Enqueued", "JobService", "JobSnapshot", "Joins", "claim_candidate", "utc_now"]
