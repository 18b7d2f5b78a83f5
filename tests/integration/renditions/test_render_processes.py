"""A render worker killed with SIGKILL mid-job: no truncated rendition anywhere, and
the resumed job renders exactly what was still missing."""

from __future__ import annotations

from pathlib import Path

from PIL import Image

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions.render import enqueue_render
from photo_pipeline.pipeline.renditions.rows import Renditions
from tests.factories import photos
from tests.support.cli_processes import WorkerProcess, wait_until
from tests.support.import_jobs import run_worker_retrying_at_once

PHOTOS = 60


def assert_complete(path: Path) -> None:
    with Image.open(path) as image:
        image.load()  # a truncated file raises here


def test_kill_9_during_render_then_resume(session_factory, db_url, tmp_path):
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(PHOTOS):
        photos.jpeg(root / f"{n:03d}.jpg", size=(640, 480), seed=n)
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker_retrying_at_once(session_factory)  # the scan, in this process
    job = enqueue_render(service, home, RenderSettings(thumbnail_size=128, preview_size=480)).job

    worker = WorkerProcess(
        db_url,
        home.parent,
        "--types",
        "render",
        "--concurrency",
        "2",
        "--executor",
        "thread",
        "--batch-size",
        "5",
    )
    wait_until(lambda: service.progress(job["id"])["done"] >= 10, "a sixth of the renders")
    worker.kill()
    assert service.progress(job["id"])["done"] < PHOTOS, "killed too late to test anything"

    # Whatever the kill interrupted, every file under its final name is complete.
    finals = [p for p in home.rglob("*") if p.is_file() and not p.name.endswith(".tmp")]
    for path in finals:
        assert_complete(path)
    done_before = {
        int(item["item_key"].split(":", 1)[0])
        for item in service.items(job["id"], states=["succeeded"])
    }
    rows_before = {(r["asset_id"], r["kind"]): r["path"] for r in Renditions(session_factory).all()}
    inodes_before = {
        key: (home / path).stat().st_ino
        for key, path in rows_before.items()
        if key[0] in done_before
    }
    assert len(inodes_before) == 2 * len(done_before)

    # Finds the dead worker, recovers and resumes its job.
    run_worker_retrying_at_once(session_factory)

    final = service.get(job["id"])
    # The crash refunded its attempt and counted an interruption instead.
    assert final["state"] == JobState.SUCCEEDED
    assert (final["attempts"], final["interruptions"]) == (1, 1)
    progress = service.progress(job["id"])
    assert progress["total"] == PHOTOS and progress["by_state"] == {"succeeded": PHOTOS}
    rows = {(r["asset_id"], r["kind"]): r["path"] for r in Renditions(session_factory).all()}
    assert len(rows) == 2 * PHOTOS
    # finished renders were not redone: same files (same inodes), never replaced
    assert {key: (home / rows[key]).stat().st_ino for key in inodes_before} == inodes_before
    for path in rows.values():
        assert_complete(home / path)
    assert not list(home.rglob("*.tmp"))  # the dead worker's temp files were swept
    assert worker.wait() != 0
