"""No write transaction is held across a file operation: every job type, run by a
real worker (thread executor, so that its items run where the audit hook sees them),
opens, renames, links, removes and makes no file or folder, and starts no process,
while its thread holds a database write transaction (SQLite's one write lock: a
worker stopped there, or waiting on a slow disk, would stall every other writer)."""

from __future__ import annotations

import shutil
import sys
import threading
import traceback
from collections.abc import Iterator

import pytest

from photo_pipeline.config import Settings
from photo_pipeline.pipeline import dedupe, organize, verify
from photo_pipeline.pipeline.ingest import places
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library import open_library
from photo_pipeline.pipeline.timeshift import job as timeshift
from photo_pipeline.write_gate import WRITES
from tests.factories import photos
from tests.support.photo_jobs import run_library_jobs

# Audited events that touch the file system or start a process.
FILE_EVENTS = frozenset(
    {
        "open",
        "os.rename",
        "os.remove",
        "os.link",
        "os.symlink",
        "os.mkdir",
        "os.rmdir",
        "os.chmod",
        "os.utime",
        "os.truncate",
        "os.listdir",
        "os.scandir",
        "shutil.copyfile",
        "shutil.copytree",
        "shutil.rmtree",
        "subprocess.Popen",
    }
)


class FileOpsInWrites:
    """An audit hook (there is no removing one: it is switched off instead) that
    records each file event of a thread inside a write transaction."""

    def __init__(self) -> None:
        self.on = False
        self.found: list[str] = []
        self._busy = threading.local()
        sys.addaudithook(self._hook)

    def _hook(self, event: str, args: tuple[object, ...]) -> None:
        if not self.on or event not in FILE_EVENTS or getattr(self._busy, "value", False):
            return
        if not getattr(WRITES._depth, "value", 0):  # this thread's open write transactions
            return
        self._busy.value = True  # formatting the stack opens source files
        try:
            where = "".join(traceback.format_stack(limit=8)[:-1])
            self.found.append(f"{event} {args!r:.200}\n{where}")
        finally:
            self._busy.value = False


_PROBE: FileOpsInWrites | None = None


@pytest.fixture
def file_ops_in_writes() -> Iterator[FileOpsInWrites]:
    global _PROBE
    if _PROBE is None:
        _PROBE = FileOpsInWrites()
    _PROBE.found.clear()
    _PROBE.on = True
    try:
        yield _PROBE
    finally:
        _PROBE.on = False


def test_no_job_holds_a_write_transaction_across_a_file_operation(
    backend, db_url, tmp_path, file_ops_in_writes
):
    home = tmp_path / "home"
    url = f"sqlite:///{home / 'library.sqlite3'}" if backend == "sqlite" else db_url
    lib = open_library(Settings(home=home, database_url=url, thumbnail_size=64, preview_size=160))
    photos_folder = tmp_path / "photos"
    try:
        for n in range(4):
            photos.jpeg(
                photos_folder / f"IMG_{n}.jpg",
                size=(48, 32),
                seed=n,
                taken="2023:07:14 10:15:30",
                model="Pixel 7",
            )
        (photos_folder / "IMG_0.xmp").write_text("<x:xmpmeta/>")
        shutil.copy(photos_folder / "IMG_1.jpg", photos_folder / "IMG_1 copy.jpg")
        photos.dng(photos_folder / "raw/IMG_9.dng", seed=9)
        import_folders(lib.service, lib.catalog, [photos_folder], follow_up=lib.settings)
        run_library_jobs(lib)
        moved = organize.start_organize(lib.service, tmp_path / "organized", move=True).job
        run_library_jobs(lib)
        organize.start_undo(lib.service, moved["id"])
        run_library_jobs(lib)
        deduped = dedupe.start_dedupe(lib.service, home).job
        run_library_jobs(lib)
        dedupe.start_undo(lib.service, deduped["id"])
        run_library_jobs(lib)
        verify.start_verify(lib.service)
        run_library_jobs(lib)
        shifted = timeshift.start_timeshift(lib.service, camera="Pixel 7", by="+1h").job
        run_library_jobs(lib)
        timeshift.start_undo(lib.service, shifted["id"])
        run_library_jobs(lib)
        places.start_backfill(lib.service, refresh=True)
        run_library_jobs(lib)
        dedupe.start_dedupe(lib.service, home)
        run_library_jobs(lib)
        dedupe.start_purge(lib.service, home, 0)
        run_library_jobs(lib)
        jobs = lib.service.list_jobs(limit=100)
    finally:
        lib.close()
    assert {job["state"] for job in jobs} == {"succeeded"}, [
        (j["job_type"], j["state"], j["error_message"]) for j in jobs
    ]
    assert {job["job_type"] for job in jobs} >= {
        "scan",
        "render",
        "similar",
        "organize",
        "organize.undo",
        "dedupe",
        "dedupe_undo",
        "dedupe_purge",
        "verify",
        "timeshift",
        "timeshift_undo",
        "places",
    }
    assert file_ops_in_writes.found == []
