"""dedupe with its worker killed by SIGKILL at random moments, resumed each time; then
undone through the command line (#16)."""

from __future__ import annotations

import json
import multiprocessing
import os
import random
from collections import Counter
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.pipeline import dedupe
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.organize import LibraryBusy
from tests.factories import photos
from tests.support.cli_processes import run_command, wait_until
from tests.support.dedupe_library import digests, sha256_tree
from tests.support.photo_jobs import scan_folders

CONTENTS = 90
KILLS = 12
COPY_NAMES = ("backup/{}", "old/copy_{}", "phone/Copy of {}", "dump/deep/{}")


def serve_dedupe(db_url: str, batch_size: int, burst: bool) -> None:
    """A worker process for dedupe jobs (the target of a forkserver child)."""
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    factory = open_database(db_url)
    # Recovered jobs run again at once; every kill spends an interruption, not an attempt.
    service = JobService(factory, retry_policy=RetryPolicy(0.001, 0.01, max_interruptions=100))
    config = WorkerConfig(
        job_types=(dedupe.JOB_TYPE,), batch_size=batch_size, poll_seconds=0.02, burst=burst
    )
    Worker(service, WorkerRegistry(factory), registry, config).run()


@pytest.fixture
def spawn_worker(db_url):
    """Worker processes from a forkserver that imported everything once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["photo_pipeline.pipeline.job_types", __name__])
    started = []

    def spawn(batch_size: int, *, burst: bool = False):
        process = context.Process(
            target=serve_dedupe, args=(db_url, batch_size, burst), daemon=True
        )
        process.start()
        started.append(process)
        return process

    yield spawn
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()


def build(root: Path, rng: random.Random) -> None:
    """CONTENTS photos, each with 1 to 4 copies elsewhere (a few hundred files)."""
    for n in range(CONTENTS):
        original = photos.jpeg(root / f"card/IMG_{n:04d}.jpg", size=(24, 16), seed=n)
        data = original.read_bytes()
        for pattern in rng.sample(COPY_NAMES, rng.randint(1, 4)):
            copy = root / pattern.format(original.name)
            copy.parent.mkdir(parents=True, exist_ok=True)
            copy.write_bytes(data)
            os.chmod(copy, rng.choice([0o600, 0o640, 0o644]))


def succeeded(service: JobService, job_id: str) -> int:
    return service.progress(job_id)["by_state"].get("succeeded", 0)


@pytest.mark.slow
def test_kill_9_during_a_dedupe_loses_nothing_and_undo_restores(
    session_factory, db_url, tmp_path, spawn_worker
):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    root, home = tmp_path / "photos", tmp_path / "home"
    build(root, rng)
    scan_folders(session_factory, root)
    before = sha256_tree(root)
    assert len(before) > 200, "a few hundred files"
    contents = {h for h, _, _ in before.values()}
    assert len(contents) == CONTENTS

    service = JobService(session_factory)
    moves = dedupe.plan_dedupe(session_factory)["summary"]["files"]
    assert moves == len(before) - CONTENTS
    # hard_links=False: every copy goes through temp file + fsync + verify + link.
    job = dedupe.start_dedupe(service, home, max_attempts=100, hard_links=False).job
    for _ in range(KILLS):
        # Capped, so that the job is still mid-way at the last kill.
        target = min(succeeded(service, job["id"]) + rng.randint(0, 12), moves - 20)
        worker = spawn_worker(rng.choice([1, 3, 10]))
        wait_until(
            lambda target=target: succeeded(service, job["id"]) >= target,
            f"{target} copies quarantined (seed {seed})",
        )
        worker.kill()
        worker.join()
        with pytest.raises(LibraryBusy):
            dedupe.start_dedupe(service, tmp_path / "elsewhere")
    assert succeeded(service, job["id"]) < moves, f"finished before the last kill (seed {seed})"

    last = spawn_worker(10, burst=True)
    last.join()
    assert last.exitcode == 0
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED, f"seed {seed} {final}"
    assert final["attempts"] == 1, f"the kills spent attempts (seed {seed}) {final}"
    assert service.progress(job["id"])["by_state"] == {"succeeded": moves}

    quarantine = home / "quarantine" / job["id"]
    left, held = sha256_tree(root), sha256_tree(quarantine)
    assert not [p for p in [*left, *held] if "/.pp-" in f"/{p}"], f"temp files (seed {seed})"
    # Nothing lost: library + quarantine hold exactly what the library held.
    assert digests(left, held) == digests(before), f"seed {seed}"
    # No content without a file in place, each exactly once, none both here and there.
    assert Counter(h for h, _, _ in left.values()) == Counter(dict.fromkeys(contents, 1))
    assert not set(left) & set(held), f"seed {seed}"
    for relative, facts in held.items():
        assert before[relative] == facts, f"{relative}: bytes, mtime or mode (seed {seed})"
    # The catalogue followed: every quarantined copy marked, no duplicates listed.
    catalog = Catalog(session_factory)
    assert Counter(f["state"] for f in catalog.files())["quarantined"] == moves
    assert catalog.duplicates() == []

    undone = run_command(db_url, home, "dedupe", "--undo", job["id"], "--wait", "--json")
    assert undone.returncode == 0, undone.stderr
    assert json.loads(undone.stdout)["report"]["restored"] == moves
    assert sha256_tree(root) == before, f"undo did not restore the tree (seed {seed})"
    assert len(catalog.duplicates()) == CONTENTS
