"""Importing folders: register them as sources and queue the jobs that catalogue them."""

from __future__ import annotations

from pathlib import Path

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobBlocked, JobService, JobSnapshot
from photo_pipeline.media import DEFAULT_MAX_PIXELS
from photo_pipeline.pipeline import scan
from photo_pipeline.pipeline.catalog import Catalog


class NotAFolder(PhotoPipelineError):
    code = "not_a_folder"
    status = 422


def import_folders(
    service: JobService,
    catalog: Catalog,
    folders: list[Path],
    *,
    max_pixels: int = DEFAULT_MAX_PIXELS,
) -> list[JobSnapshot]:
    """Register ``folders`` and queue one scan per folder; a folder whose scan is
    already queued or running gets that job back instead of a second one."""
    for folder in folders:
        if not folder.is_dir():
            raise NotAFolder("not_a_folder", f"{folder} is not a folder")
    jobs = []
    for folder in folders:
        source = catalog.add_source(folder)
        lock = scan.lock_for(source["id"])
        try:
            job = service.enqueue(
                scan.JOB_TYPE,
                lock=lock,
                params={
                    "sources": [{"id": source["id"], "path": source["path"]}],
                    "max_pixels": max_pixels,
                },
            )
        except JobBlocked as exc:
            holders = service.blockers(lock)
            if exc.code != "lock_held" or not holders:
                raise
            job = service.get(holders[0]["id"])
        jobs.append(job)
    return jobs
