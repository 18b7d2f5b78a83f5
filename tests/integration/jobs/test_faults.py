"""Faults of issue 12 at the coordinator, CLI and API level: dependents brought back
by a retry, burst workers and delayed jobs, exit codes of waited-for jobs, and the
health of the embedded worker."""

from __future__ import annotations

import errno
from datetime import timedelta
from pathlib import Path

import httpx
import pytest

from photo_pipeline.jobs import JobBlocked, JobService, JobState, RetryPolicy
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import HandlerRegistry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.cli_processes import WorkerProcess, wait_until

S = JobState


def test_retrying_a_prerequisite_revives_what_its_failure_cancelled(service):
    scan = service.enqueue("scan", max_attempts=1)
    render = service.enqueue("render", items=["a", "b"], prerequisites=[scan["id"]])
    similar = service.enqueue("similar", prerequisites=[render["id"]])
    unrelated = service.enqueue("render", prerequisites=[scan["id"]])
    service.cancel(unrelated["id"])  # cancelled on request: stays cancelled
    claimed = service.claim(["scan"], "w1")
    failed = service.transition(
        scan["id"], S.FAILED, fencing_token=claimed["fencing_token"], error=("boom", "x")
    )
    assert failed["state"] == S.FAILED
    assert [service.get(j["id"])["state"] for j in (render, similar)] == [S.CANCELLED] * 2

    service.retry(scan["id"])
    for job in (render, similar):
        revived = service.get(job["id"])
        assert (revived["state"], revived["waiting_for"], revived["error_code"]) == (
            S.QUEUED,
            1,
            None,
        )
    assert service.progress(render["id"])["by_state"] == {"queued": 2}
    assert service.get(unrelated["id"])["state"] == S.CANCELLED
    # The chain runs to its end once the prerequisite succeeds.
    for job_type, job in (("scan", scan), ("render", render), ("similar", similar)):
        claimed = service.claim([job_type], "w2")
        assert claimed is not None and claimed["id"] == job["id"]
        if job is render:
            service.set_items(render["id"], [("a", "running"), ("b", "running")])
            service.set_items(render["id"], [("a", "succeeded"), ("b", "succeeded")])
        service.transition(job["id"], S.SUCCEEDED, fencing_token=claimed["fencing_token"])
    assert service.get(similar["id"])["state"] == S.SUCCEEDED


def test_a_dependent_with_another_failed_prerequisite_stays_cancelled(service):
    first = service.enqueue("a", max_attempts=1)
    second = service.enqueue("b", max_attempts=1)
    both = service.enqueue("c", prerequisites=[first["id"], second["id"]])
    for job in (first, second):
        claimed = service.claim([job["job_type"]], "w1")
        service.transition(job["id"], S.FAILED, fencing_token=claimed["fencing_token"])
    service.retry(first["id"])
    assert service.get(both["id"])["state"] == S.CANCELLED  # `b` is still failed
    service.retry(second["id"])
    assert service.get(both["id"])["state"] == S.QUEUED


def test_burst_work_follows_chains_but_not_far_delays(service, clock):
    delayed = service.enqueue("t", run_after=clock.now + timedelta(hours=1))
    behind_delayed = service.enqueue("u", prerequisites=[delayed["id"]])
    assert not service.has_work(["t"]) and not service.has_work(["u"])
    assert service.has_work(["t"], within=timedelta(hours=2))
    assert service.has_work(["u"], within=timedelta(hours=2))

    soon = service.enqueue("t")
    behind_soon = service.enqueue("u", prerequisites=[soon["id"]])
    assert service.has_work(["t"]) and service.has_work(["u"])
    claimed = service.claim(["t"], "w1", lease_seconds=30)
    assert claimed["id"] == soon["id"]
    assert not service.has_work(["t"])  # held by a live worker: nothing for us
    assert service.has_work(["u"])  # but `u` will run once it is done
    clock.advance(seconds=31)
    assert service.has_work(["t"])  # an expired lease is work: recover it
    service.transition(soon["id"], S.SUCCEEDED, fencing_token=claimed["fencing_token"])
    assert service.has_work(["u"]) and service.claim(["u"], "w1")["id"] == behind_soon["id"]
    assert service.get(behind_delayed["id"])["state"] == S.QUEUED


def test_worker_burst_exits_while_a_job_is_delayed_far_ahead(session_factory, db_url, tmp_path):
    """And the delayed job keeps its lock meanwhile (README: a job holds its lock from
    enqueue to its end, delays and retries included)."""
    service = JobService(session_factory)
    delayed = service.enqueue(
        "test.record",
        lock="library",
        params={"log": str(tmp_path / "run.log")},
        items=["a"],
        run_after=utc_now() + timedelta(days=1),
    )
    worker = WorkerProcess(
        db_url, tmp_path, "--burst", "--import", "tests.support.worker_handlers", "--types",
        "test.record",
    )  # fmt: skip
    try:
        assert worker.wait(timeout=45) == 0, worker.log()
    finally:
        if worker.proc.poll() is None:
            worker.kill()
    assert service.get(delayed["id"])["state"] == S.QUEUED
    with pytest.raises(JobBlocked) as refused:
        service.enqueue("test.record", lock="library")
    assert refused.value.code == "lock_held"


def test_a_full_disk_spends_an_interruption_not_an_attempt(session_factory):
    handlers = HandlerRegistry()
    runs = []

    @handlers.handler("t.write")
    def write(ctx: JobContext) -> None:
        runs.append(ctx.job["attempts"])
        if len(runs) == 1:
            raise OSError(errno.ENOSPC, "No space left on device")
        for key in ctx.items():
            ctx.succeed(key)

    service = JobService(session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    job = service.enqueue("t.write", items=["a"], max_attempts=1)
    config = WorkerConfig(burst=True, poll_seconds=0.01)
    Worker(service, WorkerRegistry(session_factory), handlers, config).run()
    final = service.get(job["id"])
    assert final["state"] == S.SUCCEEDED, final
    assert (final["attempts"], final["interruptions"], runs) == (1, 1, [1, 1])
    assert any(e["message"] and "No space" in e["message"] for e in service.events(job["id"]))


def _photos(root: Path, count: int) -> None:
    for n in range(count):
        photos.jpeg(root / f"IMG_{n:03d}.jpg", size=(32, 24), seed=n, taken="2023:07:14 10:00:00")


def test_organize_wait_with_failed_files_exits_5(cli, tmp_path):
    root = tmp_path / "photos"
    _photos(root, 4)
    code, _, err = cli("import", str(root), "--wait")
    assert code == 0, err
    with open(root / "IMG_001.jpg", "ab") as edited:  # changed since the scan
        edited.write(b"edited")
    code, out, err = cli("organize", "--dest", str(tmp_path / "out"), "--wait")
    assert code == 5, (out, err)
    assert "content_changed" in out
    code, out, _ = cli("jobs", "--json")
    assert code == 0 and '"state": "succeeded"' in out


def test_health_reports_a_dead_embedded_worker(db_url, tmp_path, monkeypatch):
    def crash(self: Worker) -> None:
        raise RuntimeError("worker bug")

    monkeypatch.setattr(Worker, "_recover_dead_workers", crash)
    with running_server(db_url, tmp_path / "home", embedded_workers=1) as server:
        url = f"{server.base_url}/api/health"
        wait_until(lambda: httpx.get(url).json().get("worker") == "dead", "worker dead", 20)
        health = httpx.get(url).json()
        assert (health["status"], health["database"]) == ("degraded", "ok")


def test_health_is_ok_with_a_live_embedded_worker(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home", embedded_workers=1) as server:
        health = httpx.get(f"{server.base_url}/api/health").json()
        assert (health["status"], health["database"], health["worker"]) == ("ok", "ok", "ok")
