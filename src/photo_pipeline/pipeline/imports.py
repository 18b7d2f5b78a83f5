"""Importing folders: register them as sources and queue the jobs that catalogue them."""

from __future__ import annotations

from pathlib import Path

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobService, JobSnapshot
from photo_pipeline.pipeline import scan
from photo_pipeline.pipeline.catalog import Catalog


class NotAFolder(PhotoPipelineError):
    code = "not_a_folder"
    status = 422


def import_folders(service: JobService, catalog: Catalog, folders: list[Path]) -> list[JobSnapshot]:
    """Register ``folders`` and enqueue a scan of them; returns the jobs queued, first
    to last (later job types are chained onto the scan as they arrive)."""
    for folder in folders:
        if not folder.is_dir():
            raise NotAFolder("not_a_folder", f"{folder} is not a folder")
    registered = [catalog.add_source(folder) for folder in folders]
    job = service.enqueue(
        scan.JOB_TYPE,
        lock=scan.LOCK,
        params={"sources": [{"id": s["id"], "path": s["path"]} for s in registered]},
    )
    return [job]
