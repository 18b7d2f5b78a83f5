"""Watched sources as the integration tests run them: a library with small
renditions, a worker and a watch service on threads of the test process, the catalogue
read back by path, files written the ways phones and copies write them, and the scans
the watchers queued."""

from __future__ import annotations

import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import select

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import files, jobs, source_watchers
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.library import Library, open_library
from photo_pipeline.pipeline.watch.config import WatchConfig
from photo_pipeline.pipeline.watch.service import WatchService
from tests.support.cli_processes import wait_until
from tests.support.import_jobs import settings_for

# Short enough for tests; the settle window still has to pass for every file.
FAST = WatchConfig(
    settle_seconds=0.4, poll_seconds=0.3, lease_seconds=3, acquire_seconds=0.1, tick_seconds=0.05
)
FAST_ENV = {
    "PHOTO_PIPELINE_WATCH_SETTLE_SECONDS": "0.4",
    "PHOTO_PIPELINE_WATCH_POLL_SECONDS": "0.3",
    "PHOTO_PIPELINE_WATCH_LEASE_SECONDS": "3",
    "PHOTO_PIPELINE_WATCH_ACQUIRE_SECONDS": "0.1",
    # Small renditions: these tests are about watching, not rendering.
    "PHOTO_PIPELINE_THUMBNAIL_SIZE": "64",
    "PHOTO_PIPELINE_PREVIEW_SIZE": "160",
}


@contextmanager
def watched_library(db_url: str, home: Path) -> Iterator[Library]:
    lib = open_library(settings_for(home, db_url))
    try:
        yield lib
    finally:
        lib.close()


@contextmanager
def running_worker(lib: Library) -> Iterator[Worker]:
    """A worker on a thread, running every job as it comes, until the block ends."""
    config = WorkerConfig(concurrency=2, executor="thread", poll_seconds=0.05)
    worker = Worker(lib.service, lib.workers, registry, config)
    thread = threading.Thread(target=worker.run, daemon=True)
    thread.start()
    try:
        yield worker
    finally:
        worker.request_stop()
        thread.join(timeout=30)


@contextmanager
def running_watchers(lib: Library, config: WatchConfig = FAST) -> Iterator[WatchService]:
    service = WatchService(lib, config)
    service.start()
    try:
        yield service
    finally:
        service.stop()


def catalogued(lib: Library, source_id: int) -> dict[str, tuple[str, int | None, int]]:
    """The source's file rows: path -> (state, asset id, size)."""
    query = select(files.c.path, files.c.state, files.c.asset_id, files.c.size).where(
        files.c.source_id == source_id
    )
    with read_session(lib.sessions) as session:
        return {
            paths.from_text(row.path): (row.state, row.asset_id, row.size)
            for row in session.execute(query)
        }


def present(lib: Library, source_id: int) -> set[str]:
    return {p for p, (state, _, _) in catalogued(lib, source_id).items() if state == "present"}


def watcher_scans(lib: Library) -> list[dict]:
    """The scans of given paths (a watcher's), oldest first: id, state, paths."""
    query = select(jobs.c.id, jobs.c.state, jobs.c.params).where(jobs.c.job_type == "scan")
    with read_session(lib.sessions) as session:
        rows = session.execute(query.order_by(jobs.c.seq)).all()
    return [
        {"id": row.id, "state": row.state, "paths": row.params["sources"][0]["paths"]}
        for row in rows
        if "paths" in row.params["sources"][0]
    ]


def lease_holder(lib: Library, source_id: int) -> tuple[str, int] | None:
    """(holder, pid) of the source's watcher lease row, if any."""
    query = select(source_watchers.c.holder, source_watchers.c.pid).where(
        source_watchers.c.source_id == source_id
    )
    with read_session(lib.sessions) as session:
        row = session.execute(query).first()
    return None if row is None else (row.holder, row.pid)


def write_photos(folder: Path, count: int, *, prefix: str = "IMG", start: int = 0) -> list[Path]:
    """``count`` small distinct JPEGs (a card's dump): their relative names."""
    from tests.factories import photos

    folder.mkdir(parents=True, exist_ok=True)
    base = zlib.crc32(prefix.encode()) * 100_000  # another prefix, other pictures
    return [
        photos.jpeg(folder / f"{prefix}_{n:05d}.jpg", size=(24, 16), seed=base + n)
        for n in range(start, start + count)
    ]


def wait_for_jobs(lib: Library) -> None:
    """Until every job queued so far has ended (an import's chain, say)."""
    ended = {"succeeded", "failed", "cancelled"}
    wait_until(
        lambda: all(str(job["state"]) in ended for job in lib.service.list_jobs(limit=1000)),
        "the jobs queued to end",
    )


class SlowWriter:
    """Another process writing a file in chunks and holding it open between them (a
    4 GB video being copied): ``more()`` has it write the next chunk; ``finish()`` the
    rest, then close the file and exit."""

    _CODE = (
        "import sys\n"
        "data = open(sys.argv[1], 'rb').read()\n"
        "out = open(sys.argv[2], 'wb', buffering=0)\n"
        "step = len(data) // 4\n"
        "at = 0\n"
        "for line in sys.stdin:\n"
        "    if line.strip() == 'rest':\n"
        "        break\n"
        "    out.write(data[at:at + step]); at += step\n"
        "    print('wrote', at, flush=True)\n"
        "out.write(data[at:]); out.close()\n"
        "print('closed', flush=True)\n"
    )

    def __init__(self, content: Path, target: Path) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", self._CODE, str(content), str(target)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _say(self, line: str) -> str:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self.proc.stdout.readline()

    def more(self) -> None:
        assert self._say("more").startswith("wrote")

    def finish(self) -> None:
        assert self._say("rest").startswith("closed")
        self.proc.communicate(timeout=30)  # closes the pipes
