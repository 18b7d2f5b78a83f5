"""`worker --jobs N`: one worker process runs several jobs at once, each with its own
lease, heartbeat and cancellation, so a long job (a scan of one folder) does not
hold back a short one (a render of another)."""

from __future__ import annotations

import signal

import pytest

from photo_pipeline.jobs import JobService, JobState
from tests.support.cli_processes import WorkerProcess, wait_until

WORKER = (
    "--import",
    "tests.support.gated_handlers",
    "--types",
    "test.gated,test.quick",
    "--executor",
    "thread",
    "--concurrency",
    "2",
    "--lease-seconds",
    "3",  # heartbeats every second: a job that ran past its lease kept it
)


@pytest.fixture
def db_service(session_factory) -> JobService:
    return JobService(session_factory)


@pytest.fixture
def worker(db_url, tmp_path):
    started: list[WorkerProcess] = []

    def start(*args: str) -> WorkerProcess:
        process = WorkerProcess(db_url, tmp_path, *WORKER, *args)
        started.append(process)
        return process

    yield start
    for process in started:
        if process.proc.poll() is None:
            process.kill()


def state(service: JobService, job_id: str) -> str:
    return service.get(job_id)["state"]


def item_running(service: JobService, job_id: str) -> bool:
    return service.progress(job_id)["by_state"].get("running", 0) == 1


def test_a_long_job_does_not_hold_back_a_short_one(db_service, worker, tmp_path):
    gate = tmp_path / "scan-done"
    scan = db_service.enqueue("test.gated", items=["folder-a"], params={"gate": str(gate)})
    process = worker("--jobs", "2")
    wait_until(lambda: item_running(db_service, scan["id"]), "the long job to start")
    render = db_service.enqueue("test.quick", items=["folder-b/1.jpg", "folder-b/2.jpg"])
    wait_until(lambda: state(db_service, render["id"]) == JobState.SUCCEEDED, "the short job")
    assert state(db_service, scan["id"]) == JobState.RUNNING
    # Past several lease lengths, the long job still holds its first lease.
    gate.touch()
    wait_until(lambda: state(db_service, scan["id"]) == JobState.SUCCEEDED, "the long job")
    scan_done = db_service.get(scan["id"])
    assert scan_done["fencing_token"] == 1 and scan_done["attempts"] == 1
    claims = {e["message"] for e in db_service.events(scan["id"]) if e["type"] == "claimed"}
    assert claims == {e["message"] for e in db_service.events(render["id"])
                      if e["type"] == "claimed"}  # fmt: skip
    process.signal(signal.SIGTERM)
    assert process.wait(60) == 0


def test_each_job_is_cancelled_on_its_own(db_service, worker, tmp_path):
    gates = [tmp_path / "gate-1", tmp_path / "gate-2"]
    jobs = [
        db_service.enqueue("test.gated", items=["x"], params={"gate": str(gate)}) for gate in gates
    ]
    process = worker("--jobs", "2")
    wait_until(lambda: all(item_running(db_service, j["id"]) for j in jobs), "both jobs running")
    db_service.cancel(jobs[0]["id"])
    wait_until(lambda: state(db_service, jobs[0]["id"]) == JobState.CANCELLED, "the cancel")
    assert state(db_service, jobs[1]["id"]) == JobState.RUNNING
    gates[1].touch()
    wait_until(lambda: state(db_service, jobs[1]["id"]) == JobState.SUCCEEDED, "the other job")
    process.signal(signal.SIGTERM)
    assert process.wait(60) == 0


def test_a_stop_hands_every_running_job_back(db_service, worker, tmp_path):
    jobs = [
        db_service.enqueue("test.gated", items=["x"], params={"gate": str(tmp_path / f"g{n}")})
        for n in range(2)
    ]
    process = worker("--jobs", "2", "--shutdown-seconds", "1")
    wait_until(lambda: all(item_running(db_service, j["id"]) for j in jobs), "both jobs running")
    process.signal(signal.SIGTERM)
    process.wait(60)
    for job in jobs:
        after = db_service.get(job["id"])
        assert after["state"] == JobState.RETRY_QUEUED and after["attempts"] == 0
        assert db_service.progress(job["id"])["by_state"] == {"queued": 1}
