"""organize --move with its worker killed by SIGKILL at random moments, resumed each
time; then undone through the command line. An undo killed likewise (it reverses a
few files at once) resumes and restores every file."""

from __future__ import annotations

import json
import multiprocessing
import random
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.media import hash_file
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.support.cli_processes import run_command, wait_until
from tests.support.photo_jobs import TEMPLATE, scan_folders, tree

PHOTOS = 240
KILLS = 22


def serve_organize(db_url: str, batch_size: int, burst: bool) -> None:
    """A worker process for organize jobs (the target of a forkserver child)."""
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    factory = open_database(db_url)
    # Recovered jobs run again at once: this is about crashes, not backoff. Every kill
    # spends an interruption (not an attempt): allow more than KILLS of them.
    service = JobService(factory, retry_policy=RetryPolicy(0.001, 0.01, max_interruptions=100))
    config = WorkerConfig(
        job_types=(organize.JOB_TYPE, organize.UNDO_JOB_TYPE),
        batch_size=batch_size,
        poll_seconds=0.02,
        burst=burst,
    )
    Worker(service, WorkerRegistry(factory), registry, config).run()


@pytest.fixture
def spawn_worker(db_url):
    """Start worker processes from a forkserver that has imported everything once, so
    that each of the many restarts costs milliseconds, not an interpreter start-up."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["photo_pipeline.pipeline.job_types", __name__])
    started = []

    def spawn(batch_size: int, *, burst: bool = False):
        args = (db_url, batch_size, burst)
        process = context.Process(target=serve_organize, args=args, daemon=True)
        process.start()
        started.append(process)
        return process

    yield spawn
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()


def build(root: Path) -> dict[str, str]:
    """Photos in four folders, every tenth with an XMP sidecar, and two different
    photos sharing a name and a capture time; returns the sidecars' hashes."""
    sidecars = {}
    for n in range(PHOTOS):
        photo = root / f"card{n % 4}/IMG_{n:04d}.jpg"
        photos.jpeg(
            photo, size=(24, 16), seed=n, taken=f"2021:{1 + n % 12:02d}:03 10:{n % 60:02d}:00"
        )
        if n % 10 == 0:
            sidecar = photo.with_suffix(".xmp")
            sidecar.write_text(f"<x:xmpmeta>photo {n}</x:xmpmeta>")
            sidecars[str(sidecar)] = hash_file(sidecar)
    for n, folder in enumerate(("a", "b")):
        photos.jpeg(
            root / f"{folder}/SAME.jpg", size=(24, 16), seed=900 + n, taken="2020:05:05 05:05:05"
        )
    return sidecars


def succeeded(service: JobService, job_id: str) -> int:
    return service.progress(job_id)["by_state"].get("succeeded", 0)


@pytest.mark.slow
def test_kill_9_during_a_move_resumes_without_loss_and_undo_restores(
    session_factory, db_url, tmp_path, spawn_worker
):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    root, dest = tmp_path / "photos", tmp_path / "organized"
    sidecar_hashes = build(root)
    scan_folders(session_factory, root)
    before = tree(root)
    catalogue = {a["content_hash"] for a in Catalog(session_factory).assets(limit=10**6)}
    assert len(catalogue) == PHOTOS + 2
    # Someone else's file at a name the plan would use: it must survive untouched.
    stranger = dest / "2020/2020-05-05/SAME.jpg"
    stranger.parent.mkdir(parents=True)
    stranger.write_bytes(b"not ours")

    service = JobService(session_factory)
    dry_run = organize.plan_organize(session_factory, dest, TEMPLATE, move=True)
    moves = dry_run["summary"]["actions"]["move"]
    # hard_links=False: every file goes through temp file + fsync + verify + link.
    job = organize.start_organize(
        service, dest, TEMPLATE, move=True, max_attempts=100, hard_links=False
    ).job
    for round_ in range(KILLS):
        # Capped, so that the job is still mid-way at the last kill (a worker that
        # has nothing left to reach is killed right after it starts: a moment too).
        target = min(succeeded(service, job["id"]) + rng.randint(0, 10), moves - 30)
        worker = spawn_worker(rng.choice([1, 3, 10]))
        wait_until(
            lambda target=target: succeeded(service, job["id"]) >= target,
            f"{target} files organized (seed {seed})",
        )
        worker.kill()
        worker.join()
        if round_ == 0:
            with pytest.raises(organize.LibraryBusy) as refused:
                organize.start_organize(service, tmp_path / "elsewhere", TEMPLATE)
            assert refused.value.code == "lock_held" and job["id"] in refused.value.detail
    total = service.progress(job["id"])["total"]
    assert total == moves  # the job journalled the plan the dry run showed
    assert succeeded(service, job["id"]) < total, f"finished before the last kill (seed {seed})"

    last = spawn_worker(10, burst=True)
    last.join()
    assert last.exitcode == 0
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED, f"seed {seed} {final}"
    # The kills spent interruptions, not the job's attempts.
    assert final["interruptions"] > KILLS // 2 and final["attempts"] == 1, f"seed {seed} {final}"
    assert service.progress(job["id"])["by_state"] == {"succeeded": total}

    placed = tree(dest)
    assert not [p for p in placed if "/.pp-" in f"/{p}"], f"temp files left (seed {seed})"
    assert stranger.read_bytes() == b"not ours"
    assert "2020/2020-05-05/SAME-2.jpg" in placed and "2020/2020-05-05/SAME-3.jpg" in placed
    # Every photo exactly once, its sidecars too, nothing else; every source is gone.
    assert len(placed) == PHOTOS + 2 + len(sidecar_hashes) + 1
    assert {h for h, _ in placed.values()} == catalogue | set(sidecar_hashes.values()) | {
        hash_file(stranger)
    }
    assert tree(root) == {}, f"sources left behind (seed {seed})"
    # The catalogue followed the files: rescanning the old source finds nothing missing.
    scan_folders(session_factory, root)
    rows = Catalog(session_factory).files()
    assert {f["state"] for f in rows if f["asset_id"]} == {"present"}
    assert {f["source_path"] for f in rows} == {str(dest)}

    undone = run_command(db_url, tmp_path, "organize", "--undo", job["id"], "--wait", "--json")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["job"]["state"] == "succeeded"
    assert tree(root) == before, f"undo did not restore the tree byte for byte (seed {seed})"
    assert tree(dest) == {
        "2020/2020-05-05/SAME.jpg": (hash_file(stranger), stranger.stat().st_mtime_ns)
    }


@pytest.mark.slow
def test_kill_9_during_an_undo_resumes_and_restores_every_file(
    session_factory, db_url, tmp_path, spawn_worker
):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    root, dest = tmp_path / "photos", tmp_path / "organized"
    build(root)
    scan_folders(session_factory, root)
    before = tree(root)
    service = JobService(session_factory)
    # Copied back, not linked: every file goes through temp file + fsync + verify.
    job = organize.start_organize(service, dest, TEMPLATE, move=True, hard_links=False).job
    spawn_worker(10, burst=True).join()
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert tree(root) == {}

    undo = organize.start_undo(service, job["id"], max_attempts=100).job
    total = service.progress(job["id"])["total"]  # the undo adds its items as it starts
    for _ in range(KILLS // 2):
        target = min(succeeded(service, undo["id"]) + rng.randint(0, 10), total - 30)
        worker = spawn_worker(rng.choice([1, 3, 10]))
        wait_until(
            lambda target=target: succeeded(service, undo["id"]) >= target,
            f"{target} files put back (seed {seed})",
        )
        worker.kill()
        worker.join()
    assert succeeded(service, undo["id"]) < total, f"finished before the last kill (seed {seed})"

    last = spawn_worker(10, burst=True)
    last.join()
    final = service.get(undo["id"])
    assert final["state"] == JobState.SUCCEEDED, f"seed {seed} {final}"
    assert service.progress(undo["id"])["by_state"] == {"succeeded": total}
    assert tree(root) == before, f"undo did not restore the tree byte for byte (seed {seed})"
    assert tree(dest) == {}, f"left in the destination (seed {seed})"
