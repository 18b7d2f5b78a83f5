"""The worker runtime: claims jobs, runs their handlers, keeps the lease alive,
recovers abandoned work, and shuts down without losing anything."""

from __future__ import annotations

import errno
import logging
import multiprocessing
import os
import random
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import timedelta
from types import FrameType
from typing import Any

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs import wakeup
from photo_pipeline.jobs.budget import MemoryBudget, default_budget, return_freed_memory
from photo_pipeline.jobs.context import JobContext, LeaseLost
from photo_pipeline.jobs.errors import JobError
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.service import JobService, JobSnapshot
from photo_pipeline.jobs.states import JobState
from photo_pipeline.jobs.workers import WorkerRegistry, new_worker_id

log = logging.getLogger("photo_pipeline.worker")

# While the database is unreachable, try again after a capped, jittered backoff.
RECONNECT = RetryPolicy(base_seconds=0.25, max_seconds=10.0)
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
_MIN_IDLE_SECONDS = 0.25
# How often a worker looks for dead workers on its host (a pid check per worker).
_DEAD_WORKER_CHECK_SECONDS = 2.0
# Jobs a worker runs at once unless told otherwise. Their items share one executor
# (--concurrency), so more slots do not oversubscribe the CPU; they let a long scan,
# a render and a similar of other folders all move, while each slot costs only a
# thread, a heartbeat and a database connection. Locks (one organize, verify, dedupe
# at a time; one scan per folder) rarely let more than a few run together anyway.
DEFAULT_JOBS = 4
# A burst worker waits for jobs due this soon (a short retry backoff), not longer.
BURST_HORIZON = timedelta(seconds=60)


@dataclass(frozen=True)
class WorkerConfig:
    job_types: tuple[str, ...] = ()  # empty: every type the handler registry knows
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
        self.id = worker_id or new_worker_id()
        self.config = config
        self._service = service
        self._registry = registry
        self._handlers = handlers
        self._types = list(config.job_types or handlers.job_types())
        self._shutdown = threading.Event()
        self._wake = threading.Event()
        self._done = threading.Event()
        self._current: dict[str, JobContext] = {}
        self._current_lock = threading.Lock()
        self._listening = threading.Event()
        self._dead_checked_at = -_DEAD_WORKER_CHECK_SECONDS
        self._signals = 0
        self._signal_pipe = -1  # written by the signal handler (install_signal_handlers)
        self._rng = random.Random()
        self._log = logging.LoggerAdapter(log, {"worker_id": self.id})
        # One budget for every job the worker runs: their items share its memory.
        self.memory_budget = MemoryBudget(_budget_limit(config))

    # ── control ────────────────────────────────────────────────────────────────
    def request_stop(self) -> None:
        """Stop claiming; the job in hand finishes its in-flight items and is handed
        back to the queue."""
        self._shutdown.set()
        self._wake.set()

    def install_signal_handlers(self) -> None:
        """First SIGTERM/SIGINT: graceful stop within ``shutdown_seconds``; a second
        one: exit at once."""
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._signal_pipe = write_end
        threading.Thread(
            target=self._stop_on_signal, args=(read_end,), name="signals", daemon=True
        ).start()
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, _frame: FrameType | None) -> None:
        # Python runs this in the main thread between two bytecodes, also inside an
        # Event.wait holding the event's lock (not reentrant): setting that event here
        # would wait for ever. So no locks here: the stop happens on another thread.
        self._signals += 1
        if self._signals > 1:
            os._exit(128 + signum)
        os.write(self._signal_pipe, bytes([signum]))

    def _stop_on_signal(self, read_end: int) -> None:
        signum = os.read(read_end, 1)[0]
        self._log.info("signal %s: stopping, handing back in-flight work", signum)
        self.request_stop()
        self._enforce_deadline()

    def _enforce_deadline(self) -> None:
        """If the worker has not stopped in time, hand its jobs back ourselves and exit;
        the handlers' later writes are refused by fencing."""
        if self._done.wait(self.config.shutdown_seconds):
            return
        with self._current_lock:
            contexts = list(self._current.values())
        for ctx in contexts:
            self._log.warning("shutdown deadline passed: releasing job %s", ctx.job_id)
            try:
                self._service.release(ctx.job_id, fencing_token=ctx.fencing_token)
            except (JobError, DatabaseUnavailable) as exc:
                self._log.warning("could not release job %s: %s", ctx.job_id, exc)
        # Also with no job in hand: whatever holds the worker up, it stops.
        try:
            self._registry.stop(self.id)
        except DatabaseUnavailable:
            self._log.warning("database unavailable: could not record this worker stopped")
        os._exit(0)

    # ── main loop ──────────────────────────────────────────────────────────────
    def run(self) -> int:
        """Work until stopped (or, in burst mode, until nothing is left). Returns the
        process exit code: 0 on a clean stop. An unreachable database is waited out
        (capped backoff, one log line per outage), never a reason to exit."""
        if not self._ride_out(lambda: self._registry.register(self.id, self._types)):
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
        slots = (
            ThreadPoolExecutor(self.config.jobs, thread_name_prefix="job")
            if self.config.jobs > 1
            else None
        )
        running: set[Future[Any]] = set()
        unsubscribe = wakeup.subscribe(self._service.database_key, self._wake)
        listener = self._start_listener()
        try:
            while not self._shutdown.is_set():
                running = {f for f in running if not f.done()}
                if len(running) >= self.config.jobs:
                    self._wake.wait(self.config.poll_seconds)  # a finishing job wakes us
                    self._wake.clear()
                    continue
                # Cleared before the claim: a wake arriving during it is not lost.
                self._wake.clear()
                try:
                    self._recover_dead_workers()
                    job = self._service.claim(
                        self._types, self.id, lease_seconds=self.config.lease_seconds
                    )
                    if job is not None:
                        if slots is None:
                            self.run_job(job, pool)
                        else:
                            running.add(slots.submit(self._run_in_slot, job, pool))
                        continue
                    if self.config.burst and not running and not self._work_left():
                        break
                    self._registry.beat(self.id)
                    idle = self._idle_seconds()
                except DatabaseUnavailable as exc:
                    self._wait_for_database(exc)
                    continue
                self._wake.wait(idle)
        finally:
            unsubscribe()
            if listener is not None:
                listener.set()
            if slots is not None:
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
        ctx = JobContext(
            self._service,
            job,
            self.id,
            shutdown=self._shutdown,
            pool=pool,
            pool_size=self.config.concurrency,
            budget=self.memory_budget,
            batch_size=self.config.batch_size,
            flush_size=self.config.batch_size,
        )
        heartbeat = _Heartbeat(self._service, self._registry, ctx, self.config.lease_seconds)
        with self._current_lock:
            self._current[ctx.job_id] = ctx
        heartbeat.start()
        ctx.log.info("job started (attempt %s)", job["attempts"])
        try:
            try:
                self._handlers.get(job["job_type"])(ctx)
                ctx.flush()
            finally:
                # Stopped before the job's last write, so that a beat landing after it
                # does not report a lease lost.
                heartbeat.stop()
            return self._finish(ctx)
        except LeaseLost as exc:
            ctx.log.warning("lease lost, job abandoned: %s", exc)
            return None
        except Exception as exc:
            outage = database_outage(exc)
            if outage is not None:
                return self._hand_back_after_outage(ctx, outage)
            full = disk_full(exc)
            if full is not None:
                return self._interrupt(ctx, ("disk_full", str(full)))
            ctx.log.exception("handler failed")
            return self._fail(ctx, exc)
        finally:
            with self._current_lock:
                self._current.pop(ctx.job_id, None)

    # ── internals ──────────────────────────────────────────────────────────────
    def _run_in_slot(self, job: JobSnapshot, pool: Executor | None) -> None:
        try:
            self.run_job(job, pool)
        except Exception:
            self._log.exception("job %s: unexpected failure in its slot", job["id"])
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
                    self._log.debug("listener: %s", exc)
                attempt += 1
                stop.wait(RECONNECT.delay(attempt, self._rng).total_seconds())

        threading.Thread(target=listen, name=f"listen-{self.id}", daemon=True).start()
        return stop

    def _on_runnable(self) -> None:
        self._listening.set()
        self._wake.set()

    def _finish(self, ctx: JobContext) -> JobState | None:
        token = ctx.fencing_token
        if ctx.lease_lost:
            ctx.log.warning("lease lost, job abandoned")
            return None
        try:
            if ctx.cancelled:
                final = self._service.transition(
                    ctx.job_id, JobState.CANCELLED, fencing_token=token
                )
            elif self._shutdown.is_set() and self._unfinished(ctx.job_id):
                final = self._service.release(ctx.job_id, fencing_token=token)
            else:
                final = self._service.transition(
                    ctx.job_id, JobState.SUCCEEDED, fencing_token=token
                )
        except JobError as exc:
            ctx.log.warning("could not finish job: %s", exc)
            return None
        ctx.log.info("job %s", final["state"])
        return JobState(final["state"])

    def _fail(self, ctx: JobContext, exc: Exception) -> JobState | None:
        try:
            ctx.flush()  # items that succeeded before the failure stay succeeded
            final = self._service.transition(
                ctx.job_id,
                JobState.FAILED,
                fencing_token=ctx.fencing_token,
                error=("handler_error", f"{type(exc).__name__}: {exc}"),
            )
        except DatabaseUnavailable as outage:
            return self._hand_back_after_outage(ctx, outage)
        except (JobError, LeaseLost) as error:
            ctx.log.warning("could not record the failure: %s", error)
            return None
        ctx.log.info("job %s", final["state"])
        return JobState(final["state"])

    def _interrupt(self, ctx: JobContext, error: tuple[str, str]) -> JobState | None:
        """An infrastructure failure the handler could not get past (a full disk):
        hand the job back without spending an attempt; it runs again after the
        backoff of its interruption count, until ``max_interruptions`` run out."""
        ctx.log.warning("job interrupted: %s: %s", *error)
        try:
            ctx.flush()  # items that succeeded before stay succeeded
            final = self._service.interrupt(
                ctx.job_id, fencing_token=ctx.fencing_token, error=error
            )
        except DatabaseUnavailable as outage:
            return self._hand_back_after_outage(ctx, outage)
        except (JobError, LeaseLost) as failure:
            ctx.log.warning("could not hand the job back: %s", failure)
            return None
        ctx.log.info("job %s", final["state"])
        return JobState(final["state"])

    def _hand_back_after_outage(
        self, ctx: JobContext, outage: DatabaseUnavailable
    ) -> JobState | None:
        """The database went away under the job: once it is back, hand the job back
        as interrupted (the attempt refunded); the next claim resumes its items.
        Should the lease run out first, recovery does the same."""
        ctx.log.warning("database unavailable during the job: %s", outage.detail)
        if not self._wait_for_database(outage, logged=True):
            return None
        try:
            final = self._service.interrupt(
                ctx.job_id,
                fencing_token=ctx.fencing_token,
                error=("database_unavailable", outage.detail),
            )
        except (JobError, DatabaseUnavailable) as error:
            ctx.log.warning("could not hand the job back: %s", error)
            return None
        ctx.log.info("job handed back after the outage: %s", final["state"])
        return JobState(final["state"])

    def _wait_for_database(self, outage: DatabaseUnavailable, *, logged: bool = False) -> bool:
        """Probe the database with a capped, jittered backoff until it answers (True)
        or the worker is told to stop (False). One log line per outage, not one
        traceback per attempt."""
        if not logged:
            self._log.warning("database unavailable, retrying with backoff: %s", outage.detail)
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            if self._shutdown.wait(RECONNECT.delay(attempt, self._rng).total_seconds()):
                return False
            try:
                self._registry.beat(self.id)
            except DatabaseUnavailable:
                continue
            self._log.warning("database reachable again after %.1f s", time.monotonic() - started)
            return True

    def _ride_out(self, action: Callable[[], Any]) -> bool:
        """Run ``action`` once the database answers; False if stopped before."""
        while True:
            try:
                action()
                return True
            except DatabaseUnavailable as exc:
                if not self._wait_for_database(exc):
                    return False

    def _unfinished(self, job_id: str) -> bool:
        progress = self._service.progress(job_id)
        return bool(progress["done"] < progress["total"])

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


class _Heartbeat(threading.Thread):
    """Renews the lease on its own schedule, so a slow item never loses it, and
    passes cancel requests and lease loss to the job context."""

    def __init__(
        self, service: JobService, registry: WorkerRegistry, ctx: JobContext, lease: float
    ) -> None:
        super().__init__(name=f"heartbeat-{ctx.job_id}", daemon=True)
        self._service = service
        self._registry = registry
        self._ctx = ctx
        self._lease = lease
        self._stopped = threading.Event()

    def run(self) -> None:
        ctx = self._ctx
        unreachable = False
        while not self._stopped.wait(self._lease / 3):
            try:
                state = self._service.renew_lease(
                    ctx.job_id,
                    ctx.worker_id,
                    lease_seconds=self._lease,
                    fencing_token=ctx.fencing_token,
                )
                self._registry.beat(ctx.worker_id)
            except DatabaseUnavailable as exc:
                if not unreachable:  # once per outage
                    ctx.log.warning("heartbeat: database unavailable: %s", exc.detail)
                unreachable = True
                continue
            except Exception:
                ctx.log.exception("heartbeat failed; trying again")
                continue
            unreachable = False
            ctx.observe(state)
            if state is None:
                ctx.log.warning("lease lost")
                return

    def stop(self) -> None:
        self._stopped.set()
        self.join()


def database_outage(exc: BaseException) -> DatabaseUnavailable | None:
    """The ``DatabaseUnavailable`` behind ``exc`` (itself, or what it was raised
    from), if the failure was the database going away rather than the handler."""
    found = _cause(exc, lambda e: isinstance(e, DatabaseUnavailable))
    return found if isinstance(found, DatabaseUnavailable) else None


def disk_full(exc: BaseException) -> OSError | None:
    """The ``ENOSPC``/``EDQUOT`` error behind ``exc``: the disk, not the handler."""
    found = _cause(exc, lambda e: isinstance(e, OSError) and e.errno in _DISK_FULL)
    return found if isinstance(found, OSError) else None


def _cause(exc: BaseException, matches: Callable[[BaseException], bool]) -> BaseException | None:
    """``exc`` or the first exception in its cause/context chain that ``matches``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if matches(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
