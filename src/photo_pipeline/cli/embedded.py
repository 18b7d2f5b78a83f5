"""The worker a ``--wait`` runs in this process when no live worker serves its jobs."""

from __future__ import annotations

import os
import threading
from concurrent.futures import Executor
from datetime import timedelta

from photo_pipeline.jobs.errors import JobError
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.service import JobSnapshot, utc_now
from photo_pipeline.jobs.states import JobState
from photo_pipeline.pipeline.library import Library

# A worker that has not heartbeaten for this long is not counted on to do the work.
LIVE_WORKER_HEARTBEAT = timedelta(seconds=60)


def needs_embedded_worker(lib: Library, job_types: set[str]) -> bool:
    """True unless live workers serve every one of ``job_types``. Live: registered,
    not found dead on this host, and heartbeating recently."""
    lib.workers.find_dead_on_this_host()
    recent = utc_now() - LIVE_WORKER_HEARTBEAT
    served = {
        job_type
        for worker in lib.workers.list()
        if worker["heartbeat_at"] >= recent
        for job_type in worker["job_types"]
    }
    return not job_types <= served


def refuse_unknown(job_types: set[str]) -> None:
    """``no_handler`` unless this process can run every one of ``job_types``."""
    import photo_pipeline.pipeline.job_types  # noqa: F401  (runs them here: registers them)

    unknown = sorted(t for t in job_types if t not in registry)
    if unknown:
        raise JobError(
            "no_handler",
            f"this process has no handler for {', '.join(unknown)}: start "
            "`photo-pipeline worker` with the module that provides it",
        )
    unmet = [reason for t in sorted(job_types) if (reason := registry.missing(t))]
    if unmet:
        raise JobError(
            "no_handler",
            f"this process cannot run every job waited for: {'; '.join(unmet)}; "
            "start `photo-pipeline worker` where it can",
        )


class EmbeddedWorker(Worker):
    """A worker on a thread of its own that serves every photo job type, and sets
    ``job_ended`` (the waiter's event, when given) each time a job it ran has its
    final state written: the waiter looks at once instead of at its next refresh."""

    def __init__(
        self, lib: Library, job_types: set[str], job_ended: threading.Event | None = None
    ) -> None:
        refuse_unknown(job_types)
        # Not burst: a job waiting out a retry backoff must still be run; the waiter
        # stops the worker once every job is finished.
        config = WorkerConfig(concurrency=os.cpu_count() or 1, poll_seconds=0.2)
        super().__init__(lib.service, lib.workers, registry, config)
        self.job_ended = threading.Event() if job_ended is None else job_ended
        self.failure: list[BaseException] = []
        self._thread = threading.Thread(
            target=self._run_reporting, name="embedded-worker", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop claiming and wait for the thread (the job in hand is handed back)."""
        self.request_stop()
        self._thread.join()

    def run_job(self, job: JobSnapshot, pool: Executor | None = None) -> JobState | None:
        try:
            return super().run_job(job, pool)
        finally:
            self.job_ended.set()

    def _run_reporting(self) -> None:
        try:
            self.run()
        except BaseException as exc:
            self.failure.append(exc)
