"""A worker that loses its job between preparing a batch and writing it writes none of
its rows: catalogue and rendition rows land in the fenced transaction that reports
their items done, so a stale worker cannot overwrite what its successor recorded."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select, update

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.schema import assets, files, jobs, organize_entries, renditions, sources
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.states import ItemState
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.media import DEFAULT_MAX_PIXELS
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions.render import enqueue_render
from tests.factories import photos
from tests.support.photo_jobs import scan_folders


def taken_over_at_the_first_results(monkeypatch, session_factory) -> list[str]:
    """Make another worker take the job (a new claim: new owner, new fencing token)
    just before this worker writes its first batch of results."""
    real = JobService.set_items
    stolen: list[str] = []

    def steal_then_write(self, job_id, updates, **kwargs):
        batch = list(updates)
        if not stolen and any(u[1] == ItemState.SUCCEEDED for u in batch):
            with write_session(session_factory) as session:
                session.execute(
                    update(jobs)
                    .where(jobs.c.id == job_id)
                    .values(fencing_token=jobs.c.fencing_token + 1, lease_owner="other-worker")
                )
            stolen.append(job_id)
        return real(self, job_id, batch, **kwargs)

    monkeypatch.setattr(JobService, "set_items", steal_then_write)
    return stolen


def run_one(session_factory, job_type: str) -> JobState | None:
    service = JobService(session_factory)
    config = WorkerConfig(job_types=(job_type,), executor="thread", batch_size=5)
    worker = Worker(service, WorkerRegistry(session_factory), registry, config)
    job = service.claim([job_type], worker.id)
    assert job is not None
    return worker.run_job(job)


def count(session_factory, table, *where) -> int:
    with read_session(session_factory) as session:
        return session.scalar(select(func.count()).select_from(table).where(*where))


def test_a_scan_that_lost_its_job_writes_no_catalogue_rows(session_factory, tmp_path, monkeypatch):
    root = tmp_path / "photos"
    for n in range(8):
        photos.jpeg(root / f"{n}.jpg", size=(24, 16), seed=n)
    source = Catalog(session_factory).add_source(root)
    JobService(session_factory).enqueue(
        scan.JOB_TYPE,
        lock=scan.lock_for(source["id"]),
        params={
            "sources": [{"id": source["id"], "path": source["path"]}],
            "max_pixels": DEFAULT_MAX_PIXELS,
        },
    )
    stolen = taken_over_at_the_first_results(monkeypatch, session_factory)
    assert run_one(session_factory, scan.JOB_TYPE) is None  # the worker gave the job up
    assert stolen
    assert count(session_factory, assets) == 0, "the stale worker catalogued assets"
    assert count(session_factory, files, files.c.asset_id.is_not(None)) == 0


def test_a_render_that_lost_its_job_writes_no_rendition_rows(
    session_factory, tmp_path, monkeypatch
):
    root = tmp_path / "photos"
    for n in range(8):
        photos.jpeg(root / f"{n}.jpg", size=(64, 48), seed=n)
    scan_folders(session_factory, root)
    home = Path(tmp_path / "home")
    enqueue_render(
        JobService(session_factory), home, RenderSettings(thumbnail_size=32, preview_size=48)
    )
    stolen = taken_over_at_the_first_results(monkeypatch, session_factory)
    assert run_one(session_factory, "render") is None
    assert stolen
    assert count(session_factory, renditions) == 0, "the stale worker recorded renditions"


def test_an_organize_that_lost_its_job_journals_nothing_done(
    session_factory, tmp_path, monkeypatch
):
    """The journal's results and the catalogue rows of placed files land in the
    transaction that reports their items done: a worker taken over at that moment
    leaves every entry planned (its successor finds the placed files on disk)."""
    root = tmp_path / "photos"
    for n in range(8):
        photos.jpeg(root / f"{n}.jpg", size=(24, 16), seed=n)
    scan_folders(session_factory, root)
    dest = tmp_path / "organized"
    organize.start_organize(JobService(session_factory), dest, "{original_name}.{ext}")
    stolen = taken_over_at_the_first_results(monkeypatch, session_factory)
    assert run_one(session_factory, organize.JOB_TYPE) is None
    assert stolen
    assert count(session_factory, organize_entries, organize_entries.c.state != "planned") == 0
    dest_files = select(sources.c.id).where(sources.c.path == str(dest))
    assert count(session_factory, files, files.c.source_id.in_(dest_files)) == 0
    assert count(session_factory, organize_entries) == 8
