"""The photo jobs as the integration tests run them, in-process: a burst worker, a
scan of folders, an organize; and the trees they work on (a card-and-phone library, a
scanned folder of three photos, a tiny full filesystem), read back as path -> (hash,
mtime)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.media import DEFAULT_MAX_PIXELS, hash_file
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos

TEMPLATE = "{taken:%Y}/{taken:%Y-%m-%d}/{original_name}.{ext}"


def run_worker(
    session_factory, *types: str, concurrency: int = 1, service: JobService | None = None
) -> None:
    """Run the queued jobs (of ``types``; none named: every type) to the end in this
    process, on ``service`` (by default the coordinator as configured)."""
    config = WorkerConfig(
        job_types=types, burst=True, concurrency=concurrency, executor="thread", poll_seconds=0.05
    )
    service = service or JobService(session_factory)
    assert Worker(service, WorkerRegistry(session_factory), registry, config).run() == 0


def run_library_jobs(lib: Library) -> None:
    """``run_worker`` on a library's database and coordinator."""
    run_worker(lib.sessions, service=lib.service)


def scan_folders(session_factory, *folders: Path) -> None:
    """Catalogue folders with the scan job alone (no renders: not what this tests)."""
    service = JobService(session_factory)
    jobs = []
    for folder in folders:
        source = Catalog(session_factory).add_source(folder)
        jobs.append(
            service.enqueue(
                scan.JOB_TYPE,
                lock=scan.lock_for(source["id"]),
                params={
                    "sources": [{"id": source["id"], "path": source["path"]}],
                    "max_pixels": DEFAULT_MAX_PIXELS,
                },
            )
        )
    run_worker(session_factory, scan.JOB_TYPE)
    assert all(service.get(j["id"])["state"] == JobState.SUCCEEDED for j in jobs)


def a_scan_job_id(session_factory) -> str:
    """The id of a scan job ``scan_folders`` ran: a job of another type than undo wants."""
    jobs = JobService(session_factory).list_jobs()
    return next(j["id"] for j in jobs if j["job_type"] == scan.JOB_TYPE)


def run_organize(session_factory, dest: Path, **kwargs) -> dict:
    service = JobService(session_factory)
    job = organize.start_organize(service, dest, kwargs.pop("template", TEMPLATE), **kwargs).job
    run_worker(session_factory, organize.JOB_TYPE, organize.UNDO_JOB_TYPE)
    return service.get(job["id"])


def tree(root: Path) -> dict[str, tuple[str, int]]:
    """Relative path -> (content hash, mtime) of every file below ``root``."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = (hash_file(path), path.stat().st_mtime_ns)
    return found


def build_library(root: Path) -> None:
    """Photos of three days, a RAW+JPEG pair with sidecars, an exact duplicate and
    two different photos with one name."""
    for n in range(6):
        photos.jpeg(
            root / f"card/IMG_{n:04d}.jpg",
            size=(32, 24),
            seed=n,
            taken=f"2023:07:{14 + n % 3:02d} 10:{n:02d}:00",
        )
    photos.dng(root / "card/IMG_0100.dng", seed=100, taken="2023:07:14 11:00:00")
    photos.jpeg(root / "card/IMG_0100.JPG", size=(32, 24), seed=101, taken="2023:07:14 11:00:00")
    (root / "card/IMG_0100.xmp").write_text("<x:xmpmeta>rating 5</x:xmpmeta>")
    photos.jpeg(root / "phone/IMG_7.jpg", size=(32, 24), seed=7, taken="2022:01:02 03:04:05")
    (root / "phone/IMG_7.AAE").write_text("<plist>adjustments</plist>")
    # An exact duplicate under the same name elsewhere, and a different photo with it.
    (root / "backup").mkdir()
    (root / "backup/IMG_7.jpg").write_bytes((root / "phone/IMG_7.jpg").read_bytes())
    photos.jpeg(root / "other/IMG_7.jpg", size=(32, 24), seed=77, taken="2022:01:02 03:04:05")
    (root / "notes.txt").write_text("not a photo")


def three_photos_scanned(session_factory, root: Path) -> Path:
    """Three photos of one day written to ``root`` and catalogued."""
    for n in range(3):
        photos.jpeg(root / f"IMG_{n:04d}.jpg", size=(24, 16), seed=n, taken="2023:07:14 10:00:00")
    scan_folders(session_factory, root)
    return root


@pytest.fixture(name="library")
def three_photos_library(session_factory, tmp_path) -> Path:
    """``library``: three photos of one day in ``tmp_path/photos``, catalogued (import
    the fixture into a test module to use it)."""
    return three_photos_scanned(session_factory, tmp_path / "photos")


@pytest.fixture
def tiny_filesystem(tmp_path):
    """A 16 KiB tmpfs: a real full disk, and another filesystem (moves must copy)."""
    mount = tmp_path / "tiny"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mount)]
    mounted = subprocess.run(command, capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    yield mount
    subprocess.run(["umount", str(mount)], check=True)
