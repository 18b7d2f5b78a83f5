"""A worker killed (SIGKILL) while a file it moves is parked under a private name.

``transfer.retire`` renames the file it is about to remove to a hidden ``.pp-…parked``
name for the instant it checks it. The worker here is a real process, killed at that
instant. Whatever happens to its job next (resumed, cancelled, failed for good and
left alone while the library is scanned, verified or organized again), the user's
file must come back to its path with its bytes, and nothing private may stay behind.
"""

from __future__ import annotations

import multiprocessing
import os
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline import dedupe, organize
from photo_pipeline.pipeline.files import transfer
from photo_pipeline.pipeline.verify import start_verify, verify_report
from tests.factories import photos
from tests.support.photo_jobs import (  # noqa: F401  (three_photos_library: a fixture)
    TEMPLATE,
    run_worker,
    scan_folders,
    three_photos_library,
)

TARGET = "IMG_0001.jpg"


def park_and_hang(db_url: str, job_type: str, parked) -> None:
    """A worker for ``job_type`` (the target of a forkserver child) that stops dead,
    until it is killed, the moment a file is parked: right after ``retire`` renamed
    it, at its write lease."""
    import threading

    from photo_pipeline.db import open_database
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig

    def hang(fd: int) -> bool:
        parked.set()
        threading.Event().wait()
        raise AssertionError("unreachable")

    transfer._take_write_lease = hang
    factory = open_database(db_url)
    config = WorkerConfig(job_types=(job_type,), poll_seconds=0.02, burst=True)
    Worker(JobService(factory), WorkerRegistry(factory), registry, config).run()


@pytest.fixture
def kill_while_parked(db_url):
    """Run the job of ``job_type`` in a worker process and SIGKILL it while a file
    is parked."""
    context = multiprocessing.get_context("forkserver")
    started = []

    def run(job_type: str) -> None:
        parked = context.Event()
        process = context.Process(target=park_and_hang, args=(db_url, job_type, parked))
        process.start()
        started.append(process)
        assert parked.wait(120), "the worker never parked a file"
        process.kill()
        process.join()

    yield run
    for process in started:
        if process.is_alive():
            process.kill()
        process.join()


def contents(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir()}


def hidden(before: dict[str, bytes], folder: Path) -> list[str]:
    """The originals no longer at their names: parked (organize moves a few files at
    once, so one or more)."""
    gone = sorted(set(before) - {p.name for p in folder.iterdir()})
    assert gone, "no file parked"
    assert len([p for p in folder.iterdir() if p.name.endswith(".parked")]) == len(gone)
    return gone


def private(*folders: Path) -> list[Path]:
    return [p for folder in folders for p in folder.rglob(".pp-*")]


def start_move(session_factory, dest: Path, hard_links: bool = False) -> dict:
    service = JobService(session_factory)
    return organize.start_organize(service, dest, TEMPLATE, move=True, hard_links=hard_links).job


def test_a_file_parked_by_a_killed_worker_is_restored_on_resume(
    session_factory, library, tmp_path, kill_while_parked
):
    dest = tmp_path / "organized"
    before = contents(library)
    job = start_move(session_factory, dest)
    kill_while_parked(organize.JOB_TYPE)
    hidden(before, library)
    run_worker(session_factory, organize.JOB_TYPE)
    assert JobService(session_factory).get(job["id"])["state"] == JobState.SUCCEEDED
    assert not list(library.iterdir()), "everything moved, nothing parked"
    assert len([p for p in dest.rglob("*") if p.is_file()]) == 3
    assert not private(dest)


@pytest.mark.parametrize("hard_links", [False, True], ids=["copy", "link"])
def test_cancelling_a_job_killed_while_a_file_was_parked_gives_it_back(
    cli, session_factory, library, tmp_path, kill_while_parked, hard_links
):
    dest = tmp_path / "organized"
    before = contents(library)
    job = start_move(session_factory, dest, hard_links)
    kill_while_parked(organize.JOB_TYPE)
    hidden(before, library)
    code, out, err = cli("job", "cancel", job["id"])
    assert code == 0, err
    assert "cancelled" in out
    assert contents(library) == before, "every original back, byte for byte"
    assert not private(library, dest)


def test_a_name_taken_meanwhile_is_never_overwritten(
    cli, session_factory, library, tmp_path, kill_while_parked
):
    dest = tmp_path / "organized"
    before = contents(library)
    job = start_move(session_factory, dest)
    kill_while_parked(organize.JOB_TYPE)
    name = hidden(before, library)[0]
    (library / name).write_bytes(b"a new photo saved under the same name")
    code, _, err = cli("job", "cancel", job["id"])
    assert code == 0, err
    assert (library / name).read_bytes() == b"a new photo saved under the same name"
    stem, ext = os.path.splitext(name)
    kept = f"{stem} (kept 1){ext}"
    assert (library / kept).read_bytes() == before[name]
    assert contents(library) == {**before, name: (library / name).read_bytes(), kept: before[name]}
    assert not private(library, dest)


@pytest.mark.parametrize("then", ["scan", "verify", "organize"])
def test_a_job_failed_for_good_gives_back_what_it_parked_at_the_next_job(
    session_factory, library, tmp_path, kill_while_parked, then
):
    dest = tmp_path / "organized"
    before = contents(library)
    job = start_move(session_factory, dest)
    kill_while_parked(organize.JOB_TYPE)
    hidden(before, library)
    # The kill spends the job's only interruption: it fails for good.
    service = JobService(session_factory, retry_policy=RetryPolicy(max_interruptions=1))
    service.recover_stale(dead_workers=WorkerRegistry(session_factory).find_dead_on_this_host())
    assert service.get(job["id"])["state"] == JobState.FAILED
    if then == "scan":
        scan_folders(session_factory, library)
    elif then == "verify":
        checked = start_verify(service).job
        run_worker(session_factory, "verify")
        report = verify_report(service, checked["id"])
        assert report["missing"] == [], report
    else:
        other = organize.start_organize(service, tmp_path / "elsewhere", TEMPLATE).job
        run_worker(session_factory, organize.JOB_TYPE)
        assert service.get(other["id"])["state"] == JobState.SUCCEEDED
    assert contents(library) == before
    assert not private(library, dest)


def test_a_cancelled_dedupe_gives_back_the_original_it_parked(
    cli, session_factory, tmp_path, kill_while_parked
):
    root = tmp_path / "photos"
    photos.jpeg(root / "card/IMG_0001.jpg", size=(24, 16), seed=1)
    (root / "backup").mkdir()
    (root / "backup/IMG_0001.jpg").write_bytes((root / "card/IMG_0001.jpg").read_bytes())
    photos.jpeg(root / "card/IMG_0002.jpg", size=(24, 16), seed=2)
    scan_folders(session_factory, root)
    before = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    home = tmp_path / "home"
    job = dedupe.start_dedupe(JobService(session_factory), home, hard_links=False).job
    kill_while_parked(dedupe.JOB_TYPE)
    assert private(root), "the copy being removed was not parked"
    code, _, err = cli("job", "cancel", job["id"])
    assert code == 0, err
    after = {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}
    assert after == before
    assert not private(root, home)


def test_putting_back_a_file_another_process_put_back_first_keeps_one_name(tmp_path):
    """Two processes restoring one parked file: the second finds the name already
    linked to the very file and only drops the private name (no ``(kept 1)`` twin)."""
    (tmp_path / ".pp-organize-abcdefgh-1-1.parked").write_bytes(b"photo")
    os.link(tmp_path / ".pp-organize-abcdefgh-1-1.parked", tmp_path / TARGET)
    with transfer.spot(str(tmp_path), TARGET) as place:
        assert transfer.unpark(place, ".pp-organize-abcdefgh-1-1.parked") == TARGET
    assert contents(tmp_path) == {TARGET: b"photo"}
