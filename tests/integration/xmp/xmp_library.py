"""A scanned folder of photos for the XMP tests, and exiftool's reading of sidecars
(the command line, not the code under test)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline import xmp
from tests.factories import photos
from tests.support.photo_jobs import run_worker, scan_folders


def make_photos(root: Path, count: int) -> list[Path]:
    return [photos.jpeg(root / f"IMG_{n:04d}.jpg", size=(24, 16), seed=n) for n in range(count)]


def exiftool_tags(path: Path) -> dict:
    """What exiftool (the command) reads in the sidecar at ``path``."""
    done = subprocess.run(
        ["exiftool", "-json", "-struct", "-G1", "-XMP:all", str(path)],
        capture_output=True,
        check=True,
    )
    [found] = json.loads(done.stdout)
    return found


def exiftool_set(path: Path, *assignments: str) -> None:
    """Another program edits the sidecar."""
    subprocess.run(["exiftool", "-q", "-overwrite_original", *assignments, str(path)], check=True)


def write_xmp(session_factory) -> dict | None:
    """Queue the writer for what is pending and run it; its job as it ended."""
    service = JobService(session_factory)
    queued = xmp.request_write(service)
    run_worker(session_factory, xmp.JOB_TYPE, xmp.UNDO_JOB_TYPE)
    return None if queued is None else service.get(queued.job["id"])


def rescan(session_factory, root: Path) -> None:
    scan_folders(session_factory, root)
