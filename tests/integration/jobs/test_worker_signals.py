"""A stop signal reaches the worker whatever its main thread is doing.

Python runs a signal handler in the main thread between two of its bytecodes, so also
inside ``threading.Event.wait`` while that thread holds the event's lock, which is not
reentrant: a handler that set the event there would wait for itself for ever. The
main loop is in such a wait most of the time, and a worker resumed from SIGSTOP and
sent SIGTERM at once (test_clock_offset) is right at its end, so it sometimes never
stopped."""

from __future__ import annotations

import signal
import threading

from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.support.cli_processes import wait_until

handlers = HandlerRegistry()


@handlers.handler("test.quick")
def quick(ctx) -> None:
    for key in ctx.items():
        ctx.succeed(key)


def test_a_stop_signal_handled_inside_the_main_loops_wait_stops_the_worker(session_factory):
    registry = WorkerRegistry(session_factory)
    # Long grace: the deadline must not end this (the test's) process.
    config = WorkerConfig(job_types=("test.quick",), poll_seconds=3600, shutdown_seconds=600)
    worker = Worker(JobService(session_factory), registry, handlers, config)
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGINT)}
    worker.install_signal_handlers()
    try:
        running = threading.Thread(target=worker.run, daemon=True)
        running.start()
        wait_until(lambda: any(w["id"] == worker.id for w in registry.list()), "the worker")
        handler = threading.Thread(target=handle_inside_the_waits, args=(worker,), daemon=True)
        handler.start()
        handler.join(30)
        assert not handler.is_alive(), "the signal handler waits for a lock its thread holds"
        running.join(60)
        assert not running.is_alive(), "the worker did not stop on the signal"
        assert not any(w["id"] == worker.id for w in registry.list())  # recorded stopped
    finally:
        for signum, handler_before in previous.items():
            signal.signal(signum, handler_before)


def handle_inside_the_waits(worker: Worker) -> None:
    """The handler as Python may run it: in the thread that is inside the wait of
    the events the worker's loop waits on (holding their locks)."""
    with worker._wake._cond, worker._shutdown._cond:
        worker._signal_shutdown.handle(signal.SIGTERM, None)
