"""Renditions are published a batch at a time (#18): fsynced together, renamed, then
their rows written with the items. A worker killed between the publication of a batch
and the commit of its rows leaves complete files that no row names, never a row whose
file is missing or partial; the resumed job finishes the library."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from PIL import Image
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import write_session
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions.render import enqueue_render, render_item_within
from photo_pipeline.pipeline.renditions.rows import Renditions
from photo_pipeline.pipeline.renditions.store import RenderOutcome, publish
from tests.factories import photos
from tests.support.cli_processes import WorkerProcess, wait_until
from tests.support.import_jobs import run_worker_retrying_at_once, settings_for

PHOTOS = 30
SETTINGS = RenderSettings(thumbnail_size=128, preview_size=480)


def assert_complete(path: Path, size: int) -> None:
    assert path.stat().st_size == size
    with Image.open(path) as image:
        image.load()  # a truncated file raises here


def stored_files(home: Path) -> set[str]:
    """Renditions under their names (temp files are hidden, ``.…tmp``)."""
    store = home / "renditions"
    if not store.is_dir():
        return set()
    return {
        str(p.relative_to(home))
        for p in store.rglob("*")
        if p.is_file() and not p.name.startswith(".")
    }


@contextmanager
def rendition_writes_blocked(factory: sessionmaker[Session]) -> Iterator[None]:
    """Hold back every write of rendition rows (reads go on) until the block ends:
    SQLite's write lock, or PostgreSQL's EXCLUSIVE lock on the table."""
    with write_session(factory) as session:
        if session.get_bind().dialect.name == "postgresql":
            session.execute(text("LOCK TABLE renditions IN EXCLUSIVE MODE"))
        yield


@contextmanager
def stopped_on_failure(worker: WorkerProcess) -> Iterator[None]:
    """A worker the test did not get to kill is killed all the same."""
    try:
        yield
    finally:
        if worker.proc.poll() is None:
            worker.kill()


def items_running(service: JobService, job_id: str) -> bool:
    """The job's items are handed out (one page: --batch-size above their number), so
    the worker's next write is a flush, which publishes its batch first."""
    progress = service.progress(job_id)
    return progress["total"] > 0 and progress["by_state"].get("running") == progress["total"]


def start_worker(db_url: str, folder: Path, job_type: str) -> WorkerProcess:
    return WorkerProcess(
        db_url,
        folder,
        "--types",
        job_type,
        "--concurrency",
        "2",
        "--executor",
        "thread",
        "--batch-size",
        "1000",
    )


def test_a_crash_mid_batch_of_a_scan_leaves_no_row_without_its_file(
    session_factory, db_url, tmp_path
):
    """The import's scan renders what it reads: killed after publishing a batch, before
    its rows, it has catalogued nothing of that batch, and the files it published are
    whole; the resumed scan catalogues and renders everything."""
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(PHOTOS):
        photos.jpeg(root / f"{n:03d}.jpg", size=(640, 480), seed=n)
    service = JobService(session_factory)
    settings = settings_for(home, db_url, rendition_format="jpeg")
    scan, *chain = import_folders(service, Catalog(session_factory), [root], follow_up=settings)
    rows = Renditions(session_factory)
    worker = start_worker(db_url, tmp_path, "scan")
    wait_until(lambda: items_running(service, scan["id"]), "the scan's items handed out")
    with rendition_writes_blocked(session_factory), stopped_on_failure(worker):
        wait_until(lambda: stored_files(home), "a batch published, its rows not written")
        worker.kill()

    recorded = rows.all()
    for row in recorded:  # every row names a complete file
        assert_complete(home / row["path"], row["bytes"])
    unrecorded = stored_files(home) - {row["path"] for row in recorded}
    assert unrecorded, "the crash did not fall between a batch's files and its rows"
    for relative in unrecorded:  # files that no row names are complete too
        with Image.open(home / relative) as image:
            image.load()
    # An asset is catalogued with its renditions, or not at all.
    assert {a["id"] for a in Catalog(session_factory).assets()} == {
        row["asset_id"] for row in recorded
    }

    # Finds the dead worker, recovers and resumes the chain.
    run_worker_retrying_at_once(session_factory)

    assert [service.get(j["id"])["state"] for j in (scan, *chain)] == [JobState.SUCCEEDED] * 3
    final = rows.all()
    assert len(final) == 2 * PHOTOS and len(Catalog(session_factory).assets()) == PHOTOS
    for row in final:
        assert_complete(home / row["path"], row["bytes"])
    assert stored_files(home) == {row["path"] for row in final}
    assert not [p for p in home.rglob("*") if p.name.endswith(".tmp")]  # swept
    assert worker.wait() != 0


def test_a_crash_mid_batch_of_a_forced_render_leaves_every_row_its_whole_file(
    session_factory, db_url, tmp_path
):
    """render --force publishes new files over the names that rows already point at:
    killed after a batch is published, before its rows, every row still names a whole
    file (the old or the new one, never a partial one)."""
    root, home = tmp_path / "photos", tmp_path / "home"
    for n in range(PHOTOS):
        photos.jpeg(root / f"{n:03d}.jpg", size=(640, 480), seed=n)
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker_retrying_at_once(session_factory)  # catalogued, not rendered
    enqueue_render(service, home, SETTINGS)
    # Rendered once: every asset has its rows and files.
    run_worker_retrying_at_once(session_factory)
    rows = Renditions(session_factory)
    inodes = {row["path"]: (home / row["path"]).stat().st_ino for row in rows.all()}
    assert len(inodes) == 2 * PHOTOS

    def replaced() -> list[str]:
        return [p for p, ino in inodes.items() if (home / p).stat().st_ino != ino]

    job = enqueue_render(service, home, SETTINGS, force=True).job
    worker = start_worker(db_url, tmp_path, "render")
    wait_until(lambda: items_running(service, job["id"]), "the render's items handed out")
    with rendition_writes_blocked(session_factory), stopped_on_failure(worker):
        wait_until(replaced, "a batch published over named files, its rows not written")
        worker.kill()

    assert service.progress(job["id"])["by_state"].get("succeeded", 0) < PHOTOS
    assert replaced()
    for row in rows.all():
        assert_complete(home / row["path"], row["bytes"])

    run_worker_retrying_at_once(session_factory)

    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    final = rows.all()
    assert len(final) == 2 * PHOTOS
    for row in final:
        assert_complete(home / row["path"], row["bytes"])
    assert stored_files(home) == set(inodes)
    assert not [p for p in home.rglob("*") if p.name.endswith(".tmp")]  # swept
    assert worker.wait() != 0


def test_a_batch_publishes_what_it_can(session_factory, tmp_path):
    """An outcome whose folder was swapped for a link out of the store is published
    without renditions (and with the reason); the rest of the batch is published."""
    root, home, outside = tmp_path / "photos", tmp_path / "home", tmp_path / "outside"
    outside.mkdir()
    for n in range(2):
        photos.jpeg(root / f"{n}.jpg", size=(320, 240), seed=n)
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker_retrying_at_once(session_factory)
    params = {"home": str(home), "settings": SETTINGS.to_params()}
    todo = Renditions(session_factory).to_render(SETTINGS.fingerprint())
    from photo_pipeline.pipeline.renditions.render import item_key

    staged: list[RenderOutcome] = [
        render_item_within([str(root)], params, item_key(row)) for row in todo
    ]
    assert all(outcome.staged and not outcome.error for outcome in staged)
    kept, lost = staged
    lost_folder = Path(lost.staged[0].temp).parent
    if lost_folder == Path(kept.staged[0].temp).parent:
        pytest.skip("both contents share a store folder")  # 1 in 256
    os.rename(lost_folder, outside / "moved")
    lost_folder.symlink_to(outside / "moved")

    published = publish(home, staged)

    assert published[0] == kept
    assert published[1].renditions == () and "renditions not stored" in published[1].warning
    for file in kept.staged:
        assert (home / file.relative).is_file() and not os.path.exists(file.temp)
    assert list((outside / "moved").iterdir()) == []  # the temp files were removed
