"""The worker runtime in-process: handlers, item results, failures, cancel, burst."""

from __future__ import annotations

from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.support import worker_handlers  # noqa: F401  (registers the test job types)


@pytest.fixture
def live_service(session_factory) -> JobService:
    return JobService(session_factory)


def make_worker(service, session_factory, **config) -> Worker:
    config.setdefault("job_types", ("test.record", "test.discover"))
    config.setdefault("burst", True)
    config.setdefault("poll_seconds", 0.05)
    return Worker(service, WorkerRegistry(session_factory), registry, WorkerConfig(**config))


def runs(log: Path) -> list[str]:
    return [line.split()[1] for line in log.read_text().splitlines()] if log.exists() else []


@pytest.mark.parametrize("concurrency", [1, 4])
def test_worker_runs_items_and_item_errors_fail_only_their_item(
    live_service, session_factory, tmp_path, concurrency
):
    log = tmp_path / "run.log"
    keys = [f"ok-{n}" for n in range(30)] + ["bad-1", "bad-2"]
    job = live_service.enqueue("test.record", items=keys, params={"log": str(log)})
    worker = make_worker(live_service, session_factory, concurrency=concurrency, executor="thread")
    assert worker.run() == 0
    final = live_service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED
    assert live_service.progress(job["id"])["by_state"] == {"succeeded": 30, "failed": 2}
    failed = live_service.items(job["id"], states=["failed"])
    assert {(i["item_key"], i["error_code"]) for i in failed} == {
        ("bad-1", "corrupt_file"),
        ("bad-2", "corrupt_file"),
    }
    assert sorted(runs(log)) == sorted(keys)
    results = log.with_suffix(".results").read_text().split("\n")
    assert "ok-7 OK-7" in results


def test_handler_exception_fails_and_retries_the_job(live_service, session_factory, tmp_path):
    log = tmp_path / "run.log"
    job = live_service.enqueue(
        "test.record",
        items=["a", "b", "c"],
        params={"log": str(log), "crash_on": "b"},
        max_attempts=2,
    )
    worker = make_worker(live_service, session_factory, burst=False)
    claimed = live_service.claim(["test.record"], worker.id)
    assert worker.run_job(claimed) == JobState.RETRY_QUEUED
    after = live_service.get(job["id"])
    assert after["error_code"] == "handler_error"
    assert "handler bug on b" in after["error_message"]
    # "a" stays done; "b" was interrupted and waits for the retry.
    states = {i["item_key"]: i["state"] for i in live_service.items(job["id"])}
    assert states["a"] == "succeeded" and states["b"] == "queued"


@pytest.mark.parametrize("slots", [1, 2])
def test_a_job_whose_failure_cannot_be_flushed_fails_and_the_worker_goes_on(
    live_service, session_factory, tmp_path, slots
):
    log = tmp_path / "run.log"
    params = {"log": str(log), "writer_fails": 99}
    broken = live_service.enqueue("test.record", items=["a", "b"], params=params, max_attempts=1)
    healthy = live_service.enqueue("test.record", items=["c"], params={"log": str(log)})
    assert make_worker(live_service, session_factory, jobs=slots).run() == 0
    failed = live_service.get(broken["id"])
    assert failed["state"] == JobState.FAILED
    assert failed["error_code"] == "handler_error"
    assert "the batch's writer broke" in failed["error_message"]
    assert live_service.get(healthy["id"])["state"] == JobState.SUCCEEDED


def test_items_whose_rows_were_not_written_are_not_reported_done(
    live_service, session_factory, tmp_path
):
    log = tmp_path / "run.log"
    keys = [f"k{n}" for n in range(5)]
    params = {"log": str(log), "writer_fails": 1}
    job = live_service.enqueue("test.record", items=keys, params=params, max_attempts=2)
    assert make_worker(live_service, session_factory).run() == 0
    assert live_service.get(job["id"])["state"] == JobState.SUCCEEDED
    # The first attempt's batch was lost with its writer: its items ran again.
    assert sorted(log.with_suffix(".rows").read_text().split()) == keys


def test_discovering_handler_adds_items(live_service, session_factory):
    job = live_service.enqueue("test.discover", params={"count": 120})
    assert make_worker(live_service, session_factory).run() == 0
    assert live_service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert live_service.progress(job["id"]) == {
        "total": 120,
        "done": 120,
        "by_state": {"succeeded": 120},
    }


def test_cancel_observed_between_items_keeps_finished_items(
    live_service, session_factory, tmp_path
):
    log = tmp_path / "run.log"
    job = live_service.enqueue(
        "test.record", items=[f"k{n}" for n in range(200)], params={"log": str(log)}
    )
    worker = make_worker(live_service, session_factory, burst=False)
    claimed = live_service.claim(["test.record"], worker.id)

    # Cancel as soon as the worker has written its first results.
    original = live_service.set_items

    def cancel_after_first_results(job_id, updates, **kwargs):
        updates = list(updates)
        state = original(job_id, updates, **kwargs)
        if any(u[1] == "succeeded" for u in updates) and state == JobState.RUNNING:
            live_service.cancel(job_id)
        return state

    live_service.set_items = cancel_after_first_results
    assert worker.run_job(claimed) == JobState.CANCELLED
    by_state = live_service.progress(job["id"])["by_state"]
    assert by_state["succeeded"] >= 1 and by_state["cancelled"] >= 1
    assert set(by_state) == {"succeeded", "cancelled"}
    succeeded = {i["item_key"] for i in live_service.items(job["id"], states=["succeeded"])}
    assert succeeded <= set(runs(log))
