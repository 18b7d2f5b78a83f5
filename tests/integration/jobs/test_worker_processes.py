"""Real worker processes, killed, frozen, cancelled and stopped at arbitrary moments."""

from __future__ import annotations

import random
import signal
from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.service import utc_now
from tests.support.cli_processes import WorkerProcess, wait_until
from tests.support.frozen_processes import freeze_outside_transactions

TEST_WORKER = (
    "--import",
    "tests.support.worker_handlers",
    "--types",
    "test.record",
    "--executor",
    "thread",
)


@pytest.fixture
def workers(db_url, tmp_path):
    """Start workers on the test database; any still running at the end are killed."""
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        worker = WorkerProcess(db_url, tmp_path, *TEST_WORKER, *args)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        if worker.proc.poll() is None:
            worker.kill()


def succeeded(service: JobService, job_id: str) -> set[str]:
    return {i["item_key"] for i in service.items(job_id, states=["succeeded"], limit=100_000)}


def runs_by_pid(log: Path) -> list[tuple[int, str]]:
    if not log.exists():
        return []
    return [(int(pid), key) for pid, key in (line.split() for line in log.read_text().splitlines())]


@pytest.fixture
def live_service(session_factory) -> JobService:
    return JobService(session_factory)


def enqueue_photos(service: JobService, tmp_path: Path, count: int, **params) -> dict:
    keys = [f"photo-{n:04d}.jpg" for n in range(count)]
    return service.enqueue(
        "test.record",
        items=keys,
        params={"log": str(tmp_path / "run.log"), **params},
        max_attempts=100,
    )


@pytest.mark.slow
def test_kill_9_at_random_moments_loses_and_repeats_nothing(live_service, workers, tmp_path):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    # 20 workers may each overshoot their target by a batch or more before the kill:
    # enough items that the job is still unfinished at the last one.
    total = 1000
    job = enqueue_photos(live_service, tmp_path, total, item_seconds=0.005)
    done_when_killed: list[tuple[int, set[str]]] = []
    for _ in range(20):
        # Never more than the job has (a target past it waited for ever, seed 396941188).
        target = min(total - 1, len(succeeded(live_service, job["id"])) + rng.randint(0, 8))
        worker = workers(
            "--concurrency", str(rng.choice([1, 4])), "--batch-size", str(rng.choice([1, 4, 10]))
        )
        wait_until(
            lambda target=target: len(succeeded(live_service, job["id"])) >= target,
            f"{target} items done (seed {seed})",
        )
        worker.kill()
        done_when_killed.append((worker.pid, succeeded(live_service, job["id"])))
    assert len(done_when_killed[-1][1]) < total, "the job finished before the last kill"
    final = workers("--burst")
    assert final.wait() == 0, final.log()

    assert live_service.get(job["id"])["state"] == JobState.SUCCEEDED, f"seed {seed}"
    assert live_service.progress(job["id"])["by_state"] == {"succeeded": total}
    # Each item entered `succeeded` exactly once.
    counted = sum(
        e["data"].get("succeeded", 0)
        for e in live_service.events(job["id"])
        if e["type"] == "items"
    )
    assert counted == total
    # No item that had succeeded when a worker was killed ran again afterwards.
    runs = runs_by_pid(tmp_path / "run.log")
    pids = [pid for pid, _ in done_when_killed] + [final.pid]
    assert len(set(pids)) == len(pids)
    for round_, (_, done) in enumerate(done_when_killed):
        later = set(pids[round_ + 1 :])
        rerun = {key for pid, key in runs if pid in later and key in done}
        assert rerun == set(), f"seed {seed}: re-ran finished items {sorted(rerun)[:5]}"
    assert {key for _, key in runs} == {f"photo-{n:04d}.jpg" for n in range(total)}


def committed_more(service: JobService, job_id: str) -> None:
    done = len(succeeded(service, job_id))
    wait_until(lambda: len(succeeded(service, job_id)) > done, "the worker to commit")


def test_frozen_worker_is_fenced_out_when_it_wakes(live_service, workers, tmp_path, db_url):
    job = enqueue_photos(live_service, tmp_path, 400, item_seconds=0.01)
    frozen = workers("--concurrency", "1", "--lease-seconds", "2")
    wait_until(lambda: len(succeeded(live_service, job["id"])) >= 10, "first items")
    freeze_outside_transactions(
        frozen.signal,
        frozen.pid,
        db_url,
        job["id"],
        after_thaw=lambda: committed_more(live_service, job["id"]),
    )
    try:
        wait_until(
            lambda: live_service.get(job["id"])["lease_expires_at"] < utc_now(), "lease expiry"
        )
        taker = workers("--burst", "--lease-seconds", "2")
        assert taker.wait() == 0, taker.log()
        done = live_service.get(job["id"])
        assert done["state"] == JobState.SUCCEEDED
        assert done["lease_owner"] is None
        assert (done["attempts"], done["interruptions"]) == (1, 1)  # the freeze cost no attempt
    finally:
        frozen.signal(signal.SIGCONT)
    # Awake again, the frozen worker's heartbeat or next write is refused: its lease is
    # found lost, or (when it wakes with no item left to run) its final transition is.
    wait_until(
        lambda: any(sign in frozen.log() for sign in ("lease lost", "stale_fencing_token")),
        "the frozen worker to give up",
    )
    frozen.signal(signal.SIGTERM)
    assert frozen.wait(timeout=60) == 0
    assert live_service.progress(job["id"])["by_state"] == {"succeeded": 400}


def test_cancel_during_a_run_keeps_finished_items(live_service, workers, tmp_path):
    job = enqueue_photos(live_service, tmp_path, 300, item_seconds=0.01)
    worker = workers("--concurrency", "2")
    wait_until(lambda: len(succeeded(live_service, job["id"])) >= 10, "first items")
    done_before_cancel = succeeded(live_service, job["id"])
    live_service.cancel(job["id"])
    wait_until(lambda: live_service.get(job["id"])["state"] == JobState.CANCELLED, "cancelled")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0
    by_state = live_service.progress(job["id"])["by_state"]
    assert set(by_state) == {"succeeded", "cancelled"}
    assert by_state["cancelled"] > 0
    assert done_before_cancel <= succeeded(live_service, job["id"])


def test_sigterm_hands_the_job_back_and_another_worker_finishes(live_service, workers, tmp_path):
    job = enqueue_photos(live_service, tmp_path, 200, item_seconds=0.01)
    first = workers("--concurrency", "2")
    wait_until(lambda: len(succeeded(live_service, job["id"])) >= 10, "first items")
    first.signal(signal.SIGTERM)
    assert first.wait(timeout=60) == 0, first.log()
    handed_back = live_service.get(job["id"])
    assert handed_back["state"] == JobState.RETRY_QUEUED
    assert handed_back["error_code"] == "released" and handed_back["attempts"] == 0
    done_by_first = succeeded(live_service, job["id"])
    assert 10 <= len(done_by_first) < 200

    second = workers("--burst")
    assert second.wait() == 0, second.log()
    assert live_service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert live_service.progress(job["id"])["by_state"] == {"succeeded": 200}
    rerun = {
        key
        for pid, key in runs_by_pid(tmp_path / "run.log")
        if pid == second.pid and key in done_by_first
    }
    assert rerun == set()


def test_stuck_item_past_the_shutdown_deadline_is_handed_back(live_service, workers, tmp_path):
    job = enqueue_photos(live_service, tmp_path, 3, item_seconds=600)
    worker = workers("--concurrency", "1", "--shutdown-seconds", "0.5")
    wait_until(lambda: (tmp_path / "run.log").exists(), "the first item to start")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 0, worker.log()
    handed_back = live_service.get(job["id"])
    assert handed_back["state"] == JobState.RETRY_QUEUED
    assert handed_back["error_code"] == "released"
    assert live_service.progress(job["id"])["by_state"] == {"queued": 3}
    assert "shutdown deadline passed" in worker.log()


def test_second_signal_exits_at_once(live_service, workers, tmp_path):
    enqueue_photos(live_service, tmp_path, 3, item_seconds=600)
    worker = workers("--concurrency", "1", "--shutdown-seconds", "600")
    wait_until(lambda: (tmp_path / "run.log").exists(), "the first item to start")
    worker.signal(signal.SIGTERM)
    wait_until(lambda: "stopping" in worker.log(), "the first signal to be handled")
    worker.signal(signal.SIGTERM)
    assert worker.wait(timeout=60) == 128 + signal.SIGTERM
