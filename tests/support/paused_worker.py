"""A worker stopped past its lease (SIGSTOP, a suspended laptop), in-process: worker A
runs a job until a hooked ``transfer`` call, where it stops with its heartbeat; its
one-second lease runs out and a second worker (B) takes the job over; the test then
wakes A. For the tests that a woken worker never touches what was done meanwhile."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.files import transfer
from tests.support.photo_jobs import run_worker


@contextmanager
def worker_stopped_at(
    session_factory,
    monkeypatch,
    job_type: str,
    hook: str,
    stops_at: Callable[[Any], bool] = lambda place: True,
) -> Iterator[None]:
    """Run a worker for ``job_type`` in a thread until its first call of
    ``transfer.<hook>`` whose first argument (a Spot) ``stops_at`` takes; there it
    stops, heartbeat included, until the block ends, and then goes on."""
    stopped, woken = threading.Event(), threading.Event()
    real = getattr(transfer, hook)

    def stop_then_go_on(place, *args, **kwargs):
        if stops_at(place) and not stopped.is_set():
            stopped.set()
            assert woken.wait(60), "the test never woke worker A"
        return real(place, *args, **kwargs)

    monkeypatch.setattr(transfer, hook, stop_then_go_on)
    service = JobService(session_factory)
    renew = service.renew_lease

    def renew_unless_stopped(*args, **kwargs):
        if stopped.is_set():  # a stopped process runs no thread
            woken.wait(60)
        return renew(*args, **kwargs)

    monkeypatch.setattr(service, "renew_lease", renew_unless_stopped)
    config = WorkerConfig(job_types=(job_type,), burst=True, lease_seconds=1)
    worker = threading.Thread(
        target=Worker(service, WorkerRegistry(session_factory), registry, config).run
    )
    worker.start()
    try:
        assert stopped.wait(60), f"worker A never reached transfer.{hook}"
        yield
    finally:
        woken.set()
        worker.join(60)
    assert not worker.is_alive()


def take_over(session_factory, job_id: str, *job_types: str) -> JobService:
    """Once the stopped worker's lease has run out, recover its job and run it (and
    the other queued jobs of ``job_types``) to the end; returns the coordinator B used,
    which runs retries at once."""
    at_once = JobService(session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    deadline = time.monotonic() + 30
    while at_once.recover_stale() != [job_id]:
        assert time.monotonic() < deadline, "the stopped worker's lease never ran out"
        time.sleep(0.05)  # polling the database for the expiry, not a timed wait
    run_worker(session_factory, *job_types, service=at_once)
    return at_once
