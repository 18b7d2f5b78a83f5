"""kill -9 of the processes a user runs (issue 12, items 3 and 8): `serve` killed
again and again during an import, and an `organize --move --wait` killed mid-way and
run again. Kill points come from polling the jobs, never from sleeps."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.pipeline.renditions.rows import Renditions
from tests.factories import photos
from tests.support.api_server import free_port
from tests.support.cli_processes import environment, run_command, wait_until

KILLS = 5
# Enough that the scan, which renders too, outlasts five serves: each runs until its
# progress shows, which the worker writes once a second (200 were too few on a fast
# machine: the fifth serve finished the scan within a second, unseen).
PHOTOS = 400


class Serve:
    """`photo-pipeline serve` with an embedded worker (one item at a time)."""

    def __init__(self, db_url: str, home: Path, port: int) -> None:
        self.port = port
        env = {**environment(db_url, home), "PHOTO_PIPELINE_TOKEN": "crash-test-token-0123456789"}
        command = [sys.executable, "-m", "photo_pipeline", "serve", "--port", str(port)]
        self.log_path = home / f"serve-{len(list(home.glob('serve-*.log')))}.log"
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(
                [*command, "--workers-embedded", "1"], env=env, stdout=log, stderr=log
            )

    def kill(self) -> None:
        self.proc.kill()
        self.proc.wait()  # reaped: its pid is gone, as after a real crash

    def healthy(self) -> bool:
        try:
            return httpx.get(f"http://127.0.0.1:{self.port}/api/health").json()["status"] == "ok"
        except httpx.HTTPError:
            return False


@pytest.mark.slow
def test_an_import_survives_five_kills_of_serve(session_factory, db_url, tmp_path):
    root = tmp_path / "photos"
    for n in range(PHOTOS):
        photos.jpeg(root / f"IMG_{n:03d}.jpg", size=(1600, 1200), seed=n)
    home = tmp_path / "home"
    home.mkdir()
    queued = run_command(db_url, home, "import", str(root), "--json")
    assert queued.returncode == 0, queued.stderr
    service = JobService(session_factory)
    scan, render, similar = (service.get(j["id"]) for j in json.loads(queued.stdout))
    port = free_port()

    # The scan renders the photos it reads (#18): it is the import's long job.
    def rendered() -> int:
        return service.progress(scan["id"])["done"]

    done_at_kill = 0
    for kill in range(KILLS):
        serve = Serve(db_url, home, port)

        def rendering_here(serve: Serve = serve, after: int = done_at_kill) -> bool:
            job = service.get(scan["id"])
            owner = job["lease_owner"] or ""
            return f":{serve.proc.pid}:" in owner and rendered() > after

        try:
            wait_until(rendering_here, f"scan progress under serve #{kill + 1}", 50)
        finally:
            serve.kill()
        done_at_kill = rendered()
    assert done_at_kill < PHOTOS, "the scan finished before the last kill"
    assert service.get(scan["id"])["state"] != JobState.FAILED

    serve = Serve(db_url, home, port)
    try:
        wait_until(
            lambda: service.get(similar["id"])["state"] in FINISHED_STATES,
            "the import chain to finish after the restart",
            # The rest of 400 photos, their renders and similar: about 50 s on two
            # loaded cores. A deadline, not a timing assert: it ends the wait only.
            300,
        )
        assert serve.healthy()
    finally:
        serve.kill()
    finals = [service.get(j["id"]) for j in (scan, render, similar)]
    assert [j["state"] for j in finals] == [JobState.SUCCEEDED] * 3, finals
    final_scan = finals[0]
    # Five crashes, none of them the handler's fault: no attempt spent on them.
    assert (final_scan["attempts"], final_scan["interruptions"]) == (1, KILLS)
    assert service.progress(scan["id"])["by_state"] == {"succeeded": PHOTOS}
    assert len(Renditions(session_factory).all()) == 2 * PHOTOS  # rendered by the scan


def test_rerunning_a_killed_organize_wait_rejoins_its_job(session_factory, db_url, tmp_path):
    root = tmp_path / "photos"
    for n in range(150):
        photos.jpeg(root / f"IMG_{n:03d}.jpg", size=(32, 24), seed=n, taken="2023:07:14 10:00:00")
    home = tmp_path / "home"
    imported = run_command(db_url, home, "import", str(root), "--wait")
    assert imported.returncode == 0, imported.stderr
    dest = tmp_path / "organized"
    command = ["organize", "--dest", str(dest), "--move", "--wait"]
    service = JobService(session_factory)

    first = subprocess.Popen(
        [sys.executable, "-m", "photo_pipeline", *command],
        env=environment(db_url, home),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def organizing() -> dict | None:
        jobs = service.list_jobs(job_types=["organize"])
        running = jobs and jobs[0]["state"] == JobState.RUNNING
        return jobs[0] if running and service.progress(jobs[0]["id"])["done"] else None

    try:
        wait_until(organizing, "the organize job under way", 50)
    finally:
        first.kill()
        first.wait()
    job = service.list_jobs(job_types=["organize"])[0]
    assert service.progress(job["id"])["done"] < 150, "organized everything before the kill"

    # Another organize is refused, naming the job and saying its worker is gone.
    other = run_command(db_url, home, "organize", "--dest", str(tmp_path / "elsewhere"))
    assert other.returncode == 2, other.stderr
    assert job["id"] in other.stderr and "is gone" in other.stderr, other.stderr

    again = run_command(db_url, home, *command, "--json", timeout=60)
    assert again.returncode == 0, again.stderr
    assert json.loads(again.stdout)["job"]["id"] == job["id"]  # rejoined
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED
    assert service.progress(job["id"])["by_state"] == {"succeeded": 150}
    placed = sorted(p.name.split("_", 2)[-1] for p in dest.rglob("*.jpg"))  # date_time_NAME
    assert placed == [f"IMG_{n:03d}.jpg" for n in range(150)]
    assert not list(root.rglob("*.jpg"))  # every original moved, none lost
