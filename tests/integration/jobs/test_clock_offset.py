"""Leases live on the database's clock. Real worker processes whose own clocks are an
hour fast or slow (PHOTO_PIPELINE_CLOCK_OFFSET_SECONDS) can neither take a live lease
from another worker nor keep a dead one of their own."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.clock import CLOCK_OFFSET_ENV
from tests.support.cli_processes import environment, wait_until
from tests.support.frozen_processes import freeze_outside_transactions

WORKER = (
    "--import",
    "tests.support.gated_handlers",
    "--types",
    "test.gated,test.quick",
    "--executor",
    "thread",
    "--poll-seconds",
    "0.05",
    "--lease-seconds",
    "2",
)


@pytest.fixture
def db_service(session_factory) -> JobService:
    return JobService(session_factory)


@pytest.fixture
def worker(db_url, tmp_path):
    """Start `photo-pipeline worker` with its clock shifted by ``offset`` seconds."""
    started: list[subprocess.Popen] = []

    def start(offset: int, *args: str) -> subprocess.Popen:
        env = {**environment(db_url, tmp_path), CLOCK_OFFSET_ENV: str(offset)}
        log = open(tmp_path / f"worker{offset:+d}-{time.monotonic_ns()}.log", "w")  # noqa: SIM115
        process = subprocess.Popen(
            [sys.executable, "-m", "photo_pipeline", "worker", *WORKER, *args],
            env=env,
            stderr=log,
        )
        log.close()
        started.append(process)
        return process

    yield start
    for process in started:
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)
            process.kill()
            process.wait()


def running_item(service: JobService, job_id: str) -> bool:
    return service.progress(job_id)["by_state"].get("running", 0) == 1


@pytest.mark.parametrize(("holder", "other"), [(-3600, +3600), (+3600, -3600)])
def test_a_skewed_worker_cannot_take_a_live_lease(db_service, worker, tmp_path, holder, other):
    gate = tmp_path / "gate"
    job = db_service.enqueue("test.gated", items=["x"], params={"gate": str(gate)})
    first = worker(holder)
    wait_until(lambda: running_item(db_service, job["id"]), "the first worker to hold the job")
    held = db_service.get(job["id"])
    # A burst worker recovers expired leases, then leaves when nothing is left to do;
    # on its own clock, the lease would be an hour past (or an hour off) its expiry.
    second = worker(other, "--burst")
    assert second.wait(120) == 0
    after = db_service.get(job["id"])
    assert after["state"] == JobState.RUNNING
    assert after["lease_owner"] == held["lease_owner"]
    assert after["fencing_token"] == held["fencing_token"] == 1
    assert "lease_expired" not in {e["message"] for e in db_service.events(job["id"])}
    gate.touch()
    wait_until(lambda: db_service.get(job["id"])["state"] == JobState.SUCCEEDED, "the job")
    first.send_signal(signal.SIGTERM)
    assert first.wait(60) == 0


@pytest.mark.parametrize(("holder", "other"), [(+3600, -3600), (-3600, +3600)])
def test_a_skewed_worker_cannot_keep_a_dead_lease(
    db_service, worker, db_url, tmp_path, holder, other
):
    gate = tmp_path / "gate"
    job = db_service.enqueue("test.gated", items=["x"], params={"gate": str(gate)})
    first = worker(holder)
    wait_until(lambda: running_item(db_service, job["id"]), "the first worker to hold the job")
    lease = db_service.get(job["id"])
    freeze_outside_transactions(first.send_signal, first.pid, db_url)  # alive, no heartbeat
    gate.touch()
    second = worker(other)
    # The 2-second lease runs out on the database's clock: recovered, run again.
    wait_until(
        lambda: db_service.get(job["id"])["state"] == JobState.SUCCEEDED, "the job taken over"
    )
    done = db_service.get(job["id"])
    assert done["fencing_token"] == 2 and done["lease_owner"] is None
    messages = [e["message"] or "" for e in db_service.events(job["id"])]
    expired = f"worker {lease['lease_owner']} stopped heartbeating"
    assert any(m.startswith(expired) for m in messages)
    first.send_signal(signal.SIGCONT)  # its late writes are refused by fencing
    # At once: the resumed main loop is leaving its wait, where a stop signal used to
    # hang the worker now and then (test_worker_signals).
    first.send_signal(signal.SIGTERM)
    assert first.wait(60) == 0
    assert db_service.get(job["id"])["state"] == JobState.SUCCEEDED
    second.send_signal(signal.SIGTERM)
    assert second.wait(60) == 0


def test_the_offset_is_read_by_the_worker_process(db_url, tmp_path):
    """The option really shifts the process's own clock (else the tests above prove
    nothing)."""
    env = {**environment(db_url, tmp_path), CLOCK_OFFSET_ENV: "3600"}
    shown = subprocess.run(
        [sys.executable, "-c", "from photo_pipeline.jobs.clock import utc_now; "
         "import time; print(utc_now().timestamp() - time.time())"],
        env=env, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert 3590 < float(shown) < 3610
    assert os.environ.get(CLOCK_OFFSET_ENV) is None
