"""xmp_write with its worker killed by SIGKILL mid-batch, resumed each time: every
sidecar is always either its old or its new version, never a mix, and the job ends
with all of them new (#34)."""

from __future__ import annotations

import json
import multiprocessing
import random
import shutil
import subprocess
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.pipeline import curation, xmp
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.integration.xmp.xmp_library import make_photos
from tests.support.cli_processes import wait_until
from tests.support.photo_jobs import scan_folders

PHOTOS = 80
KILLS = 5
OLD = """<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about="" xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/" crs:Exposure2012="+0.{n}" xmp:Rating="1"/>
 </rdf:RDF>
</x:xmpmeta>
"""


def serve_xmp(db_url: str, batch_size: int, burst: bool) -> None:
    """A worker process for xmp jobs (the target of a forkserver child)."""
    from photo_pipeline.db import open_database
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    factory = open_database(db_url)
    service = JobService(factory, retry_policy=RetryPolicy(0.001, 0.01, max_interruptions=100))
    config = WorkerConfig(
        job_types=(xmp.JOB_TYPE,), batch_size=batch_size, poll_seconds=0.02, burst=burst
    )
    Worker(service, WorkerRegistry(factory), registry, config).run()


@pytest.fixture
def spawn_worker(db_url):
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["photo_pipeline.pipeline.job_types", __name__])
    started = []

    def spawn(batch_size: int, *, burst: bool = False):
        process = context.Process(target=serve_xmp, args=(db_url, batch_size, burst), daemon=True)
        process.start()
        started.append(process)
        return process

    yield spawn
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()


def sidecar_paths(root: Path) -> list[Path]:
    """The sidecars (a killed writer's hidden temporary file is none)."""
    return sorted(p for p in root.glob("*.xmp") if not p.name.startswith("."))


def sidecars(root: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sidecar_paths(root)}


def changed(root: Path, old: dict[str, bytes]) -> int:
    """How many sidecars no longer hold their old bytes (a cheap look, no parsing)."""
    return sum(data != old[name] for name, data in sidecars(root).items())


def check_old_or_new(root: Path, old: dict[str, bytes], seed: int) -> int:
    """Every sidecar parses and is its old bytes or its new version (rating 4, the
    field we do not own kept); how many are new. The bytes are read once, and those
    are parsed (a copy), so that a rename in between is not taken for a mix."""
    now = sidecars(root)
    snapshot = root.parent / "snapshot"
    shutil.rmtree(snapshot, ignore_errors=True)
    snapshot.mkdir()
    for name, data in now.items():
        (snapshot / name).write_bytes(data)
    done = subprocess.run(
        ["exiftool", "-json", "-G1", "-XMP:all", *map(str, sidecar_paths(snapshot))],
        capture_output=True,
        check=True,
    )
    parsed = {Path(found["SourceFile"]).name: found for found in json.loads(done.stdout)}
    assert set(now) == set(old) == set(parsed), f"seed {seed}"
    new = 0
    for name, data in now.items():
        if data == old[name]:
            continue
        tags = parsed[name]
        n = int(name.split("_")[1].split(".")[0])
        assert tags.get("XMP-xmp:Rating") == 4, f"{name}: a mix? {tags} (seed {seed})"
        assert tags.get("XMP-crs:Exposure2012") == f"+0.{n}", f"{name} (seed {seed})"
        new += 1
    return new


def test_kill_9_during_xmp_write_leaves_each_sidecar_old_or_new_and_resumes(
    session_factory, tmp_path, spawn_worker
):
    seed = random.randrange(2**32)
    rng = random.Random(seed)
    root = tmp_path / "photos"
    for n, photo in enumerate(make_photos(root, PHOTOS)):
        photo.with_suffix(".xmp").write_text(OLD.replace("{n}", str(n)))
    scan_folders(session_factory, root)
    old = sidecars(root)
    ids = [f["asset_id"] for f in Catalog(session_factory).files() if f["asset_id"]]
    assert len(ids) == PHOTOS
    curation.set_rating(session_factory, ids, 4)
    service = JobService(session_factory)
    queued = xmp.request_write(service)
    assert queued is not None
    job = queued.job

    for _ in range(KILLS):
        written = check_old_or_new(root, old, seed)
        target = min(written + rng.randint(1, 15), PHOTOS - 10)
        worker = spawn_worker(rng.choice([1, 7, 50]))
        wait_until(
            lambda target=target: changed(root, old) >= target,
            f"{target} sidecars written (seed {seed})",
        )
        worker.kill()
        worker.join()
        check_old_or_new(root, old, seed)
    assert check_old_or_new(root, old, seed) < PHOTOS, f"done before the last kill ({seed})"

    last = spawn_worker(50, burst=True)
    last.join()
    assert last.exitcode == 0
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED, f"seed {seed} {final}"
    assert final["attempts"] == 1, f"the kills spent attempts (seed {seed})"
    assert check_old_or_new(root, old, seed) == PHOTOS
    assert not [p for p in root.iterdir() if ".pp-xmp" in p.name], f"temp files ({seed})"
    by_state = service.progress(job["id"])["by_state"]
    assert by_state == {"succeeded": PHOTOS}, f"seed {seed} {by_state}"
    # The undo of the whole job puts every old sidecar back, byte for byte.
    undo = xmp.start_undo(service, job["id"]).job
    from tests.support.photo_jobs import run_worker

    run_worker(session_factory, xmp.UNDO_JOB_TYPE)
    assert service.get(undo["id"])["state"] == JobState.SUCCEEDED
    assert sidecars(root) == old, f"seed {seed}"
