"""A worker's stop on SIGTERM/SIGINT, and the deadline that ends it: the first signal
asks for a graceful stop within ``shutdown_seconds``; a second one exits at once.

Python runs a signal handler in the main thread between two bytecodes, also inside
an ``Event.wait`` holding the event's lock (not reentrant): a handler that set that
event would wait for ever. So the handler takes no lock: it only writes the signal
to a pipe, and a thread started with the handlers stops the worker and enforces the
deadline (which also ends a worker with no job in hand or an unreachable database).
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from types import FrameType

from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.errors import JobError
from photo_pipeline.jobs.service import JobService
from photo_pipeline.jobs.workers import WorkerRegistry


class SignalShutdown:
    """The signal handlers of one worker, and what acts on them."""

    def __init__(
        self,
        service: JobService,
        registry: WorkerRegistry,
        worker_id: str,
        *,
        request_stop: Callable[[], None],
        stopped: threading.Event,
        jobs_in_hand: Callable[[], list[JobContext]],
        grace_seconds: float,
        log: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        self._service = service
        self._registry = registry
        self._worker_id = worker_id
        self._request_stop = request_stop
        self._stopped = stopped
        self._jobs_in_hand = jobs_in_hand
        self._grace_seconds = grace_seconds
        self._log = log
        self._signals = 0
        self._pipe = -1  # written by the signal handler (install)

    def install(self) -> None:
        read_end, write_end = os.pipe()
        os.set_blocking(write_end, False)
        self._pipe = write_end
        threading.Thread(
            target=self._stop_on_signal, args=(read_end,), name="signals", daemon=True
        ).start()
        signal.signal(signal.SIGTERM, self.handle)
        signal.signal(signal.SIGINT, self.handle)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The handler: no locks here (see the module docstring)."""
        self._signals += 1
        if self._signals > 1:
            os._exit(128 + signum)
        os.write(self._pipe, bytes([signum]))

    def _stop_on_signal(self, read_end: int) -> None:
        signum = os.read(read_end, 1)[0]
        self._log.info("signal %s: stopping, handing back in-flight work", signum)
        self._request_stop()
        self._enforce_deadline()

    def _enforce_deadline(self) -> None:
        """If the worker has not stopped in time, hand its jobs back ourselves and exit;
        the handlers' later writes are refused by fencing."""
        if self._stopped.wait(self._grace_seconds):
            return
        for ctx in self._jobs_in_hand():
            self._log.warning("shutdown deadline passed: releasing job %s", ctx.job_id)
            try:
                self._service.release(ctx.job_id, fencing_token=ctx.fencing_token)
            except (JobError, DatabaseUnavailable) as exc:
                self._log.warning("could not release job %s: %s", ctx.job_id, exc)
        # Also with no job in hand: whatever holds the worker up, it stops.
        try:
            self._registry.stop(self._worker_id)
        except DatabaseUnavailable:
            self._log.warning("database unavailable: could not record this worker stopped")
        os._exit(0)
