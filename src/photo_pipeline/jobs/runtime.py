"""The worker runtime: claims jobs, runs their handlers, keeps the lease alive,
recovers abandoned work, and shuts down without losing anything.

The worker's loop is here; it hands each claimed job to :mod:`.job_runner` (the
handler, its lease heartbeat, the state it ends in), waits out database outages
with :mod:`.outages`, and stops on a signal by :mod:`.shutdown`."""

from __future__ import annotations

import logging
import multiprocessing
import random
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs import wakeup
from photo_pipeline.jobs.budget import MemoryBudget, default_budget, return_freed_memory
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.job_runner import JobRunner
from photo_pipeline.jobs.outages import RECONNECT, DatabaseWait, database_outage, disk_full
from photo_pipeline.jobs.schedules.book import Schedules
from photo_pipeline.jobs.schedules.ticks import Ticker
from photo_pipeline.jobs.service import JobService, JobSnapshot
from photo_pipeline.jobs.shutdown import SignalShutdown
from photo_pipeline.jobs.states import JobState
from photo_pipeline.jobs.workers import WorkerRegistry, new_worker_id

log = logging.getLogger("photo_pipeline.worker")

_MIN_IDLE_SECONDS = 0.25
# How often a worker looks for dead workers on its host (a pid check per worker).
_DEAD_WORKER_CHECK_SECONDS = 2.0
# Jobs a worker runs at once unless told otherwise. Their items share one executor
# (--concurrency), so more slots do not oversubscribe the CPU; they let a long scan,
# a render and a similar of other folders all move, while each slot costs only a
# thread, a heartbeat and a database connection. Locks (one organize, verify, dedupe
# at a time; one scan per folder) rarely let more than a few run together anyway.
DEFAULT_JOBS = 4
# How often a worker looks for due schedule ticks (one small query); an idle worker
# also wakes for the next tick. Which worker queues a tick does not matter: the
# database makes it once (jobs.schedules.ticks).
_SCHEDULE_CHECK_SECONDS = 1.0
# A burst worker waits for jobs due this soon (a short retry backoff), not longer.
BURST_HORIZON = timedelta(seconds=60)


@dataclass(frozen=True)
class WorkerConfig:
    job_types: tuple[str, ...] = ()  # empty: every type the handler registry can run here
    concurrency: int = 1  # items in parallel, in one executor all jobs share
    jobs: int = 1  # jobs run at once, each with its own lease, heartbeat and cancel
    # "thread": measured as fast as processes for Pillow work (it releases the GIL) and
    # without a pool's start-up (bench/worker.py); "process" for CPU-bound pure Python.
    executor: str = "thread"
    lease_seconds: float = 30.0
    # Idle workers are woken when a job becomes runnable (PostgreSQL NOTIFY, or a job
    # enqueued in this process) and when the next delayed job or lease is due. They
    # also look every poll_seconds (SQLite: other processes' jobs), or every
    # listen_poll_seconds while a PostgreSQL listener is up (a fallback only).
    poll_seconds: float = 1.0
    listen_poll_seconds: float = 30.0
    burst: bool = False  # exit when no work is left
    shutdown_seconds: float = 10.0  # grace for in-flight items after SIGTERM/SIGINT
    batch_size: int = 50  # items marked running, and results written, per transaction
    # Bytes the items of all its jobs may use at once, by the estimates of handlers
    # that weigh their items (JobContext.map); None: derived from the machine's
    # memory (jobs.budget.default_budget), 0: no limit.
    memory_budget: int | None = None


class Worker:
    def __init__(
        self,
        service: JobService,
        registry: WorkerRegistry,
        handlers: HandlerRegistry,
        config: WorkerConfig = WorkerConfig(),
        *,
        worker_id: str | None = None,
    ) -> None:
        unknown = [t for t in config.job_types if t not in handlers]
        if unknown:
            raise ValueError(f"no handler for job types {unknown}; known: {handlers.job_types()}")
        unmet = [reason for t in config.job_types if (reason := handlers.missing(t))]
        if unmet:
            raise ValueError("; ".join(unmet))
        self.id = worker_id or new_worker_id()
        self.config = config
        self._service = service
        self._registry = registry
        self._types = list(config.job_types or handlers.runnable_types())
        self._shutdown = threading.Event()
        self._wake = threading.Event()
        self._done = threading.Event()
        self._listening = threading.Event()
        self._dead_checked_at = -_DEAD_WORKER_CHECK_SECONDS
        self._ticker = Ticker(Schedules(service))
        self._schedules_checked_at = -_SCHEDULE_CHECK_SECONDS
        self._next_tick_at: float | None = None  # monotonic; None: no schedule ahead
        self._rng = random.Random()
        self._log = logging.LoggerAdapter(log, {"worker_id": self.id})
        # One budget for every job the worker runs: their items share its memory.
        self.memory_budget = MemoryBudget(_budget_limit(config))
        self._database = DatabaseWait(
            lambda: self._registry.beat(self.id), self._shutdown, self._rng, self._log
        )
        self._jobs = JobRunner(
            service,
            registry,
            handlers,
            self.id,
            shutdown=self._shutdown,
            database=self._database,
            budget=self.memory_budget,
            lease_seconds=config.lease_seconds,
            pool_size=config.concurrency,
            batch_size=config.batch_size,
        )
        self._signal_shutdown = SignalShutdown(
            service,
            registry,
            self.id,
            request_stop=self.request_stop,
            stopped=self._done,
            jobs_in_hand=self._jobs.in_hand,
            grace_seconds=config.shutdown_seconds,
            log=self._log,
        )

    # ── control ────────────────────────────────────────────────────────────────
    def request_stop(self) -> None:
        """Stop claiming; the job in hand finishes its in-flight items and is handed
        back to the queue."""
        self._shutdown.set()
        self._wake.set()

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT: graceful stop within ``shutdown_seconds``; a second
        one: exit at once (jobs.shutdown)."""
        self._signal_shutdown.install()

    # ── main loop ──────────────────────────────────────────────────────────────
    def run(self) -> int:
        """Work until stopped (or, in burst mode, until nothing is left). Returns the
        process exit code: 0 on a clean stop. An unreachable database is waited out
        (capped backoff, one log line per outage), never a reason to exit."""
        if not self._database.ride_out(lambda: self._registry.register(self.id, self._types)):
            self._done.set()
            return 0
        self._log.info(
            "worker started: types=%s concurrency=%s jobs=%s memory budget=%s",
            self._types,
            self.config.concurrency,
            self.config.jobs,
            "none"
            if self.memory_budget.limit is None
            else f"{self.memory_budget.limit / (1 << 20):.0f} MiB",
        )
        if self.memory_budget.limit is not None:
            return_freed_memory()  # so that RSS follows the estimates the budget counts
        pool = self._make_pool()
        # Jobs run in slot threads even one at a time, so that this loop goes on
        # ticking the schedules while a long job runs.
        slots = ThreadPoolExecutor(self.config.jobs, thread_name_prefix="job")
        running: set[Future[Any]] = set()
        unsubscribe = wakeup.subscribe(self._service.database_key, self._wake)
        listener = self._start_listener()
        try:
            while not self._shutdown.is_set():
                running = {f for f in running if not f.done()}
                if len(running) >= self.config.jobs:
                    self._wake.wait(self.config.poll_seconds)  # a finishing job wakes us
                    self._wake.clear()
                    try:  # every slot busy: the ticks are still queued on time
                        self._tick_schedules()
                    except DatabaseUnavailable as exc:
                        self._database.wait(exc)
                    continue
                # Cleared before the claim: a wake arriving during it is not lost.
                self._wake.clear()
                try:
                    self._recover_dead_workers()
                    self._tick_schedules()
                    # One statement for as many jobs as there are free slots.
                    claimed = self._service.claim_many(
                        self._types,
                        self.id,
                        limit=self.config.jobs - len(running),
                        lease_seconds=self.config.lease_seconds,
                    )
                    if claimed:
                        running.update(slots.submit(self._run_guarded, j, pool) for j in claimed)
                        continue
                    if self.config.burst and not running and not self._work_left():
                        break
                    self._registry.beat(self.id)
                    idle = self._idle_seconds()
                except DatabaseUnavailable as exc:
                    self._database.wait(exc)
                    continue
                self._wake.wait(idle)
        finally:
            unsubscribe()
            if listener is not None:
                listener.set()
            slots.shutdown(wait=True)  # stopping: each job finishes or is handed back
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)
            try:
                self._registry.stop(self.id)
            except DatabaseUnavailable:
                self._log.warning("database unavailable: could not record this worker stopped")
            self._done.set()
            self._log.info("worker stopped")
        return 0

    def run_job(self, job: JobSnapshot, pool: Executor | None = None) -> JobState | None:
        """Run one claimed job to its end; returns its final state, or None when the
        job was taken away from this worker."""
        return self._jobs.run(job, pool)

    # ── internals ──────────────────────────────────────────────────────────────
    def _run_guarded(self, job: JobSnapshot, pool: Executor | None) -> None:
        # A bug escaping one job must not stop the others: its lease runs out, and
        # recovery hands it back.
        try:
            self.run_job(job, pool)
        except Exception:
            self._log.exception("job %s: unexpected failure", job["id"])
        finally:
            self._wake.set()  # a slot is free: claim again

    def _idle_seconds(self) -> float:
        """How long to wait for a wake-up before looking again: until the next
        delayed job or lease of our types is due, at most the poll interval."""
        poll = (
            self.config.listen_poll_seconds
            if self._listening.is_set()
            else self.config.poll_seconds
        )
        due = self._service.seconds_until_due(self._types)
        if self._next_tick_at is not None:
            tick_in = self._next_tick_at - time.monotonic()
            due = tick_in if due is None else min(due, tick_in)
        if due is None:
            return poll
        # Not below a floor: a due job another worker is claiming, or a lease
        # waiting for the next recovery sweep, must not make us spin.
        return min(poll, max(due, _MIN_IDLE_SECONDS))

    def _start_listener(self) -> threading.Event | None:
        """PostgreSQL: a thread that LISTENs for runnable jobs of our types; returns
        the event that stops it. It reconnects with backoff; meanwhile we poll."""
        if not is_postgresql(self._service.session_factory):
            return None
        stop = threading.Event()

        def listen() -> None:
            attempt = 0
            while not stop.is_set():
                try:
                    wakeup.listen(self._service.database_url, self._types, self._on_runnable, stop)
                except Exception as exc:  # the database went away: poll meanwhile
                    self._listening.clear()
                    # The claim loop may be sleeping the long listening interval: it
                    # looks now (and so notices an outage at once) and polls from here.
                    self._wake.set()
                    self._log.debug("listener: %s", exc)
                attempt += 1
                stop.wait(RECONNECT.delay(attempt, self._rng).total_seconds())

        threading.Thread(target=listen, name=f"listen-{self.id}", daemon=True).start()
        return stop

    def _on_runnable(self) -> None:
        self._listening.set()
        self._wake.set()

    def _recover_dead_workers(self) -> None:
        # At most every few seconds: not between a wake-up and its claim.
        now = time.monotonic()
        if now - self._dead_checked_at < _DEAD_WORKER_CHECK_SECONDS:
            return
        self._dead_checked_at = now
        dead = self._registry.find_dead_on_this_host()
        if dead:
            recovered = self._service.recover_stale(dead_workers=dead)
            self._log.warning("workers %s died; recovered jobs %s", dead, recovered)

    def _tick_schedules(self) -> None:
        """Queue the jobs of due schedule ticks (at most every second). A failure
        other than the database's is logged, not fatal: the tick stays due."""
        now = time.monotonic()
        if now - self._schedules_checked_at < _SCHEDULE_CHECK_SECONDS:
            return
        self._schedules_checked_at = now
        try:
            due, later = self._ticker.check()
            for schedule_id in due:
                self._ticker.tick(schedule_id)
        except DatabaseUnavailable:
            raise
        except Exception:
            self._log.exception("schedules: ticking failed")
            return
        # Due ones were just ticked: look again at the next check, not sooner.
        wait = _SCHEDULE_CHECK_SECONDS if due else later
        self._next_tick_at = None if wait is None else now + max(wait, _SCHEDULE_CHECK_SECONDS / 4)

    def _work_left(self) -> bool:
        """Burst mode: can a job of our types run now or soon, or will one once a
        prerequisite that is running or runnable finishes? A job delayed further (a
        long backoff, a far ``run_after``) does not keep a burst worker alive.
        Expired leases are recovered first, so that we pick them up."""
        self._service.recover_stale()
        return self._service.has_work(self._types, within=BURST_HORIZON)

    def _make_pool(self) -> Executor | None:
        if self.config.concurrency <= 1:
            return None
        if self.config.executor == "thread":
            return ThreadPoolExecutor(self.config.concurrency, thread_name_prefix="item")
        # spawn: forking a process that runs threads (the heartbeat) is unsafe.
        return ProcessPoolExecutor(
            self.config.concurrency,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=return_freed_memory if self.memory_budget.limit is not None else None,
        )


def _budget_limit(config: WorkerConfig) -> int | None:
    if config.memory_budget is None:
        return default_budget(config.concurrency, config.executor)
    if config.memory_budget < 0:
        raise ValueError(f"memory_budget must be 0 (no limit) or more, got {config.memory_budget}")
    return config.memory_budget or None


__all__ = [
    "BURST_HORIZON",
    "DEFAULT_JOBS",
    "RECONNECT",
    "Worker",
    "WorkerConfig",
    "database_outage",
    "disk_full",
]
