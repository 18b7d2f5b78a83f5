"""A scan killed with SIGKILL mid-way, then `photo-pipeline import --wait` again."""

from __future__ import annotations

import json
import subprocess

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.curation.filters import curation_of
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.support.cli_processes import WorkerProcess, run_command, wait_until
from tests.support.import_jobs import run_import


def catalogue(factory) -> set[tuple]:
    catalog = Catalog(factory)
    hashes = {a["id"]: (a["content_hash"], a["taken_local"]) for a in catalog.assets(limit=10**6)}
    return {(f["path"], f["state"], *hashes[f["asset_id"]]) for f in catalog.files()}


@pytest.mark.slow
def test_kill_9_during_a_scan_then_import_again(session_factory, db_url, tmp_path):
    root = tmp_path / "photos"
    for n in range(300):
        photos.jpeg(
            root / f"{n // 100}/{n:03d}.jpg",
            size=(48, 32),
            seed=n,
            taken=f"2023:03:{1 + n % 28:02d} 08:{n % 60:02d}:00",
        )
    # Each photo's own rating, read back at the end of the scan: the run that finishes
    # owes it to the files the killed run catalogued too.
    subprocess.run(
        ["exiftool", "-q", "-r", "-overwrite_original", "-XMP-xmp:Rating=3", str(root)],
        check=True,
    )
    service = JobService(session_factory)
    [job] = import_folders(service, Catalog(session_factory), [root])

    worker = WorkerProcess(
        db_url,
        tmp_path,
        "--types",
        "scan",
        "--concurrency",
        "2",
        "--executor",
        "thread",
        "--batch-size",
        "10",
    )
    wait_until(lambda: service.progress(job["id"])["done"] >= 60, "a fifth of the scan")
    worker.kill()
    assert service.progress(job["id"])["done"] < 300, "killed too late to test anything"

    finished = run_command(db_url, tmp_path, "import", str(root), "--wait", "--json")
    assert finished.returncode == 0, finished.stderr
    again, render, similar = json.loads(finished.stdout)  # the import chain
    assert (render["job_type"], similar["job_type"]) == ("render", "similar")
    assert render["state"] == similar["state"] == "succeeded"
    assert again["id"] == job["id"]  # the interrupted scan was resumed, not duplicated
    assert again["state"] == "succeeded"
    assert (again["attempts"], again["interruptions"]) == (1, 1)  # the crash cost no attempt

    reference = open_database(f"sqlite:///{tmp_path / 'reference.sqlite3'}")
    run_import(reference, root)
    assert catalogue(session_factory) == catalogue(reference)
    assert len(catalogue(session_factory)) == 300
    ratings = {
        curation_of(session_factory, a["id"])["rating"]
        for a in Catalog(session_factory).assets(limit=10**6)
    }
    assert ratings == {3}, "a photo catalogued before the kill lost its own rating"
    reference.kw["bind"].dispose()
