"""Memory that runs out is the moment's fault, not the file's (#28, item 6): a decode
short of memory is ``out_of_memory``, never ``corrupt_file``; its item runs once more,
alone, after the others; and a file whose row failed so is read again by the next
import.

The memory really runs out: the processes run with an address-space limit
(``tests.support.memory_limited``: what they use once loaded plus a little), under
which a large progressive JPEG, whose coefficients libjpeg must hold whole, cannot
decode while everything else fits.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import files
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.factories.photos import jpeg, picture
from tests.support.budget_handlers import handlers
from tests.support.cli_processes import REPO, environment, run_command, wait_until
from tests.support.memory_limited import limited_environment

LIMITED = (sys.executable, "-m", "tests.support.memory_limited")


def progressive_jpeg(path: Path, size: tuple[int, int]) -> Path:
    picture(size, seed=1).save(path, "JPEG", progressive=True, quality=90)
    return path


@pytest.fixture(scope="module")
def photos_24_mp(tmp_path_factory) -> tuple[Path, Path]:
    """A small photo and a 24-MP progressive JPEG (72 MiB of coefficients to decode)."""
    folder = tmp_path_factory.mktemp("read")
    return jpeg(folder / "small.jpg"), progressive_jpeg(folder / "large.jpg", (6000, 4000))


def read_limited(extra_mib: str, small: Path, photo: Path) -> dict[str, str]:
    """What rendering and reading the metadata of ``photo`` made of it, in a process
    with ``extra_mib`` of address space to spare."""
    done = subprocess.run(
        [*LIMITED, extra_mib, "read", str(small), str(photo)],
        env=limited_environment(environment("sqlite://", REPO)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_decoders_short_of_memory_say_out_of_memory(photos_24_mp):
    small, large = photos_24_mp
    assert read_limited("unlimited", small, large) == {"render": "ok", "metadata": "ok"}
    # 32 MiB to spare: libvips' libjpeg ("Insufficient memory") and Pillow's (which
    # says only "broken data stream") both run out decoding the coefficients
    short = read_limited("32", small, large)
    assert short == {"render": "out_of_memory", "metadata": "out_of_memory"}


@pytest.fixture(scope="module")
def photo_48_mp(tmp_path_factory) -> Path:
    """48 MP, progressive: 137 MiB of coefficients, more than the worker below has."""
    return progressive_jpeg(tmp_path_factory.mktemp("large") / "large.jpg", (8000, 6000))


def test_a_worker_short_of_memory_leaves_the_photo_to_the_next_import(
    session_factory, db_url, tmp_path, photo_48_mp
):
    source = tmp_path / "photos"
    source.mkdir()
    (source / "large.jpg").write_bytes(photo_48_mp.read_bytes())
    queued = run_command(db_url, tmp_path, "import", str(source), "--json")
    assert queued.returncode == 0, queued.stderr
    scan_id = json.loads(queued.stdout)[0]["id"]

    # A worker with 160 MiB to spare (what it needs besides decodes is about 100 MiB)
    worker = subprocess.run(
        [*LIMITED, "160", "worker", "--burst", "--concurrency", "1", "--poll-seconds", "0.05"],
        env=limited_environment(environment(db_url, tmp_path)),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert worker.returncode == 0, worker.stderr
    service = JobService(session_factory)
    assert service.get(scan_id)["state"] == JobState.SUCCEEDED, worker.stderr
    [failed] = service.items(scan_id, states=["failed"])
    assert failed["error_code"] == "out_of_memory", failed["error_message"]
    with read_session(session_factory) as session:
        row = session.execute(select(files.c.state, files.c.error_code)).one()
    assert tuple(row) == ("failed", "out_of_memory")

    # With memory enough, a plain import reads the unchanged file again.
    again = run_command(db_url, tmp_path, "import", str(source), "--wait", "--json")
    assert again.returncode == 0, again.stderr
    listed = run_command(db_url, tmp_path, "assets", "--json")
    assert [(a["width"], a["height"]) for a in json.loads(listed.stdout)] == [(8000, 6000)]


@pytest.fixture
def run_worker(session_factory) -> Iterator:
    """A burst worker of the test handlers on a thread, waited for at the end."""
    running: list[tuple[Worker, threading.Thread]] = []

    def start(service: JobService, **config) -> None:
        config = {"burst": True, "poll_seconds": 0.05, **config}
        worker = Worker(service, WorkerRegistry(session_factory), handlers, WorkerConfig(**config))
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        running.append((worker, thread))

    yield start
    for worker, thread in running:
        worker.request_stop()
        thread.join(120)
        assert not thread.is_alive(), "the worker did not stop"


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_items_short_of_memory_run_again_alone(session_factory, run_worker, tmp_path, executor):
    """a and b run side by side and each runs short of memory (a transient item
    error); run again one at a time they fit. c is short even alone: it fails."""
    folder = tmp_path / "marks"
    folder.mkdir()
    service = JobService(session_factory)
    params = {"folder": str(folder), "meet": ["a", "b"], "short": ["c"], "weights": {}}
    job_id = service.enqueue("test.crowded", items=["a", "b", "c"], params=params)["id"]
    run_worker(service, concurrency=2, executor=executor, memory_budget=1000)
    wait_until(lambda: service.get(job_id)["state"] == JobState.SUCCEEDED, "the job")

    items = {i["item_key"]: i for i in service.items(job_id)}
    assert {key: item["state"] for key, item in items.items()} == {
        "a": "succeeded",
        "b": "succeeded",
        "c": "failed",
    }
    assert items["c"]["error_code"] == "out_of_memory"
    # each ran twice: beside another one, then alone (a second run that saw another
    # item running would have failed)
    runs = {key: (folder / f"runs-{key}").read_text().split() for key in "abc"}
    assert runs == {"a": ["crowded", "alone"], "b": ["crowded", "alone"], "c": ["short", "short"]}
