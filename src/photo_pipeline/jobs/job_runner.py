"""Running one claimed job to its end: its handler, the heartbeat that keeps its
lease, and the state it ends in (succeeded, cancelled, failed, handed back after a
stop, an outage or a full disk; nothing written when the lease was lost)."""

from __future__ import annotations

import threading
from concurrent.futures import Executor

from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs.budget import MemoryBudget
from photo_pipeline.jobs.context import JobContext, LeaseLost
from photo_pipeline.jobs.errors import ItemError, JobError
from photo_pipeline.jobs.group_commit import GroupCommit
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.outages import DatabaseWait, database_outage, disk_full
from photo_pipeline.jobs.service import JobService, JobSnapshot
from photo_pipeline.jobs.states import JobState
from photo_pipeline.jobs.workers import WorkerRegistry


class JobRunner:
    """Runs the jobs one worker claimed (several at once, from its job slots), and
    knows which are in hand: the shutdown deadline hands those back."""

    def __init__(
        self,
        service: JobService,
        registry: WorkerRegistry,
        handlers: HandlerRegistry,
        worker_id: str,
        *,
        shutdown: threading.Event,
        database: DatabaseWait,
        budget: MemoryBudget,
        lease_seconds: float,
        pool_size: int,
        batch_size: int,
    ) -> None:
        self._service = service
        self._registry = registry
        self._handlers = handlers
        self._worker_id = worker_id
        self._shutdown = shutdown
        self._database = database
        self._budget = budget
        self._lease_seconds = lease_seconds
        self._pool_size = pool_size
        self._batch_size = batch_size
        # Slots finishing at once share one commit (reported once it is durable).
        self._successes = GroupCommit(service.succeed_many)
        self._current: dict[str, JobContext] = {}
        self._current_lock = threading.Lock()

    def in_hand(self) -> list[JobContext]:
        """The jobs running now."""
        with self._current_lock:
            return list(self._current.values())

    def run(self, job: JobSnapshot, pool: Executor | None = None) -> JobState | None:
        """Run one claimed job to its end; returns its final state, or None when the
        job was taken away from this worker."""
        ctx = JobContext(
            self._service,
            job,
            self._worker_id,
            shutdown=self._shutdown,
            pool=pool,
            pool_size=self._pool_size,
            budget=self._budget,
            batch_size=self._batch_size,
            flush_size=self._batch_size,
        )
        heartbeat = Heartbeat(self._service, self._registry, ctx, self._lease_seconds)
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
            if isinstance(exc, ItemError):
                # The job's own input is refused (a destination swapped for a link,
                # say): its code is the job's error, for good; no traceback, no bug.
                ctx.log.warning("job refused: %s", exc)
            else:
                ctx.log.exception("handler failed")
            return self._fail(ctx, exc)
        finally:
            with self._current_lock:
                self._current.pop(ctx.job_id, None)

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
                final = self._successes.succeed(ctx.job_id, token) or self._service.transition(
                    ctx.job_id, JobState.SUCCEEDED, fencing_token=token
                )
        except JobError as exc:
            ctx.log.warning("could not finish job: %s", exc)
            return None
        ctx.log.info("job %s", final["state"])
        return JobState(final["state"])

    def _fail(self, ctx: JobContext, exc: Exception) -> JobState | None:
        try:
            _flush_before_ending(ctx)
            final = self._service.transition(
                ctx.job_id,
                JobState.FAILED,
                fencing_token=ctx.fencing_token,
                error=(exc.code, exc.message or exc.code)
                if isinstance(exc, ItemError)
                else ("handler_error", f"{type(exc).__name__}: {exc}"),
                # Input refused is refused again: no automatic retry (``job retry`` can).
                retry=not isinstance(exc, ItemError),
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
            _flush_before_ending(ctx)
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
        if not self._database.wait(outage, logged=True):
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

    def _unfinished(self, job_id: str) -> bool:
        progress = self._service.progress(job_id)
        return bool(progress["done"] < progress["total"])


def _flush_before_ending(ctx: JobContext) -> None:
    """Record the items that succeeded before a failure, so that they stay succeeded.
    A flush that fails too (the broken writer that failed the job, say) leaves them
    to run again, and the job still ends; an outage is raised for the caller."""
    try:
        ctx.flush()
    except (DatabaseUnavailable, JobError, LeaseLost):
        raise
    except Exception as exc:
        outage = database_outage(exc)
        if outage is not None:
            raise outage from exc
        ctx.log.exception("the items done before the failure were not recorded; they run again")


class Heartbeat(threading.Thread):
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
