"""An import as the integration tests run it, in-process: burst workers of two threads
(one on the caller's coordinator, one whose recovered jobs run again at once), the scan
alone (``run_import``) or the whole chain scan -> render -> similar
(``import_and_run``, with small renditions), and the catalogue read back by path."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from sqlalchemy import select

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.config import Settings
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog

SMALL = {"thumbnail_size": 64, "preview_size": 160}


def settings_for(home: Path, db_url: str, **overrides) -> Settings:
    base = Settings(home=home, database_url=db_url, rendition_format="webp", **SMALL)
    return dataclasses.replace(base, **overrides)


def run_worker_two_threads(service: JobService, session_factory) -> None:
    """A burst worker on ``service``: every job type, two items at a time."""
    config = WorkerConfig(burst=True, concurrency=2, executor="thread", poll_seconds=0.05)
    Worker(service, WorkerRegistry(session_factory), registry, config).run()


def run_worker_retrying_at_once(session_factory) -> None:
    """``run_worker_two_threads`` on a coordinator whose recovered jobs run again at
    once: the tests that use it are not about backoff."""
    service = JobService(session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    run_worker_two_threads(service, session_factory)


def run_import(session_factory, folder: Path, *, reread: bool = False) -> dict:
    """Import ``folder`` (its scan only) and run it: the finished job, its progress and
    its failed items (path -> error code)."""
    service = JobService(session_factory)
    [job] = import_folders(service, Catalog(session_factory), [folder], reread=reread)
    run_worker_two_threads(service, session_factory)
    final = service.get(job["id"])
    assert final["state"] == JobState.SUCCEEDED
    return {
        "job": final,
        "progress": service.progress(job["id"]),
        "failed": {
            i["item_key"].split(":", 1)[1]: i["error_code"]
            for i in service.items(job["id"], states=["failed"])
        },
    }


def import_and_run(session_factory, folder: Path, settings: Settings) -> list[dict]:
    """Import ``folder`` with its follow-ups (render, similar) and run them all: the
    finished jobs."""
    service = JobService(session_factory)
    jobs = import_folders(service, Catalog(session_factory), [folder], follow_up=settings)
    run_worker_retrying_at_once(session_factory)
    return [service.get(job["id"]) for job in jobs]


def catalogue_by_path(catalog: Catalog) -> dict[str, dict]:
    """Each file's row (relative path) with its asset row under ``asset``."""
    by_id = {}
    for asset in _all_assets(catalog):
        by_id[asset["id"]] = asset
    rows = {}
    for row in catalog.files():
        row = dict(row)
        row["asset"] = by_id.get(row["asset_id"])
        rows[paths.from_text(row["path"])] = row
    return rows


def _all_assets(catalog: Catalog) -> list[dict]:
    with read_session(catalog._session_factory) as session:
        return [dict(r._mapping) for r in session.execute(select(assets))]
