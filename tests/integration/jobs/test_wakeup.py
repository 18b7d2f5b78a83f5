"""Idle workers are woken, not polled for: when a job is enqueued, when its last
prerequisite succeeds, and when a delayed job comes due. Every worker here polls once
an hour, so only a wake-up can get its job done within the test.

On PostgreSQL the job is enqueued through a connection of another name, so the
in-process wake cannot reach the worker: only LISTEN/NOTIFY can."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import timedelta

import pytest
from sqlalchemy.engine import make_url

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.clock import utc_now
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.support.cli_processes import wait_until

HOUR = 3600.0
handlers = HandlerRegistry()


@handlers.handler("test.quick")
def quick(ctx) -> None:
    for key in ctx.items():
        ctx.succeed(key)


class IdleSignallingService(JobService):
    """Counts the times the worker, having found nothing to claim, is about to wait."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._idle = threading.Condition()
        self.idled = 0

    def seconds_until_due(self, job_types):
        due = super().seconds_until_due(job_types)
        with self._idle:
            self.idled += 1
            self._idle.notify_all()
        return due

    def wait_idle(self, after: int) -> None:
        """Until the worker went idle more than ``after`` times."""
        with self._idle:
            assert self._idle.wait_for(lambda: self.idled > after, 60), "never idle"


@pytest.fixture
def start_idle_worker(session_factory) -> Iterator:
    """Start a worker serving ``test.quick`` and return once it waits, idle."""
    started: list[tuple[Worker, threading.Thread]] = []

    def start() -> IdleSignallingService:
        service = IdleSignallingService(session_factory)
        # One job at a time: after a job, the worker's next wait is an idle one.
        config = WorkerConfig(
            job_types=("test.quick",), poll_seconds=HOUR, listen_poll_seconds=HOUR
        )
        worker = Worker(service, WorkerRegistry(session_factory), handlers, config)
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        started.append((worker, thread))
        service.wait_idle(0)
        return service

    yield start
    for worker, thread in started:
        worker.request_stop()
        thread.join(60)
        assert not thread.is_alive()


@pytest.fixture
def idle_worker(start_idle_worker) -> IdleSignallingService:
    return start_idle_worker()


@pytest.fixture
def enqueuer(db_url, backend, session_factory) -> Iterator[JobService]:
    """Another process's view of the database (PostgreSQL: another connection name,
    so nothing in this process wakes the worker)."""
    if backend == "sqlite":
        yield JobService(session_factory)
        return
    url = make_url(db_url).update_query_dict({"application_name": "enqueuer"}, append=True)
    factory = open_database(url.render_as_string(hide_password=False))
    yield JobService(factory)
    factory.kw["bind"].dispose()


def wait_succeeded(service: JobService, job_id: str) -> None:
    wait_until(lambda: service.get(job_id)["state"] == JobState.SUCCEEDED, "the job to run", 60)


def test_an_enqueued_job_wakes_the_idle_worker(idle_worker, enqueuer):
    for _ in range(3):
        idled = idle_worker.idled
        job = enqueuer.enqueue("test.quick", items=["a"])
        wait_succeeded(enqueuer, job["id"])
        idle_worker.wait_idle(idled)  # waiting again, for the next one


def test_a_batch_wakes_the_idle_worker(idle_worker, enqueuer):
    jobs = enqueuer.enqueue_many([{"job_type": "test.quick"} for _ in range(3)])
    for job in jobs:
        wait_succeeded(enqueuer, job["id"])


def test_a_prerequisite_done_wakes_the_idle_worker(idle_worker, enqueuer):
    scan = enqueuer.enqueue("scan")  # no worker serves it: the test runs it
    render = enqueuer.enqueue("test.quick", prerequisites=[scan["id"]])
    claimed = enqueuer.claim(["scan"], "test")
    enqueuer.transition(scan["id"], JobState.SUCCEEDED, fencing_token=claimed["fencing_token"])
    wait_succeeded(enqueuer, render["id"])


def test_a_job_handed_back_wakes_the_idle_worker(start_idle_worker, enqueuer):
    job = enqueuer.enqueue("test.quick")
    claimed = enqueuer.claim(["test.quick"], "another-worker")  # before ours starts
    start_idle_worker()
    # Handed back on the other worker's way out: runnable again at once.
    enqueuer.release(job["id"], fencing_token=claimed["fencing_token"])
    wait_succeeded(enqueuer, job["id"])


def test_a_delayed_job_wakes_the_worker_when_due(idle_worker, enqueuer):
    # Woken by the enqueue, the worker finds the job not due yet and waits for it.
    job = enqueuer.enqueue("test.quick", run_after=utc_now() + timedelta(seconds=1))
    wait_succeeded(enqueuer, job["id"])
