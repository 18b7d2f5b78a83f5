"""organize --move and its undo against a user editing the file being moved.

A program edits or replaces the source at each point of a move, on the copy path and
on the hard-link path: before the copy, during it, after the file was placed and just
before its source is removed, and while another program holds it open. Whatever the
moment, not one edited byte may be lost: the bytes the editor left must still be on
disk afterwards, in the source folder or in the destination.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.files import transfer
from tests.support.paused_worker import take_over, worker_stopped_at
from tests.support.photo_jobs import (  # noqa: F401  (three_photos_library: a fixture)
    TEMPLATE,
    run_organize,
    run_worker,
    three_photos_library,
)

TARGET = "IMG_0001.jpg"
KEPT_CODES = {"content_changed", "source_changed", "source_in_use"}


def in_place(path: Path) -> None:
    """An editor that rewrites the file's first bytes through its own descriptor."""
    mode = "r+b" if path.exists() else "wb"
    with open(path, mode) as f:
        f.write(b"EDITED IN PLACE")


def replace(path: Path) -> None:
    """An editor that saves safely: a new file renamed over the old name."""
    temp = path.with_name(f".{path.name}.save")
    temp.write_bytes(b"SAVED BY RENAME " + os.urandom(8))
    os.replace(temp, path)


def append(path: Path) -> None:
    with open(path, "ab") as f:
        f.write(b"APPENDED")


EDITORS = {"in_place": in_place, "replace": replace, "append": append}


class Editor:
    """Runs one edit of the target file the first time a hooked call reaches it, and
    remembers the bytes the edit left there. Organize moves a few files at once: a
    hook may be reached from several threads, the edit still runs once."""

    def __init__(self, path: Path, edit: Callable[[Path], None]) -> None:
        self.path, self.edit = path, edit
        self.inode = path.stat().st_ino  # the file as organize found it
        self.left: bytes | None = None
        self._lock = threading.Lock()

    def __call__(self) -> None:
        with self._lock:
            if self.left is None:
                self.edit(self.path)
                self.left = self.path.read_bytes()


def every_content(*roots: Path) -> list[bytes]:
    return [p.read_bytes() for root in roots for p in root.rglob("*") if p.is_file()]


def hook(monkeypatch, moment: str, editor: Editor, hard_links: bool) -> None:
    """Make ``editor`` run at ``moment`` of the target file's move."""
    if moment == "before_copy":
        for name in ("place_by_copy", "place_by_link"):
            real = getattr(transfer, name)

            def before(source, *args, _real=real):
                if source.name == TARGET:
                    editor()
                return _real(source, *args)

            monkeypatch.setattr(transfer, name, before)
    elif moment == "during_copy" and not hard_links:
        real_preadv = os.preadv

        def read_then_edit(fd: int, buffers, offset: int) -> int:
            read = real_preadv(fd, buffers, offset)
            if os.readlink(f"/proc/self/fd/{fd}").endswith("/" + TARGET):
                editor()  # after the first chunk was read and hashed, before it is copied
            return read

        monkeypatch.setattr(os, "preadv", read_then_edit)
    elif moment == "during_copy":
        real_link = os.link

        def edit_then_link(src, dst, **kwargs):
            if os.path.basename(src) == TARGET:
                editor()  # between the hash and the link
            return real_link(src, dst, **kwargs)

        monkeypatch.setattr(os, "link", edit_then_link)
    elif moment == "before_unlink":
        real_retire = transfer.retire

        def edit_then_retire(place, *args, **kwargs):
            if place.name == TARGET:
                editor()  # placed and verified; the source is about to go
            return real_retire(place, *args, **kwargs)

        monkeypatch.setattr(transfer, "retire", edit_then_retire)
    elif moment == "after_park":
        real_lease = transfer._take_write_lease

        def edit_then_lease(fd: int):
            if os.fstat(fd).st_ino == editor.inode:
                editor()  # the source's name is free now: the edit makes a new file
            return real_lease(fd)

        monkeypatch.setattr(transfer, "_take_write_lease", edit_then_lease)
    else:
        raise AssertionError(moment)


@pytest.mark.parametrize("hard_links", [False, True], ids=["copy", "link"])
@pytest.mark.parametrize("moment", ["before_copy", "during_copy", "before_unlink", "after_park"])
@pytest.mark.parametrize("edit", sorted(EDITORS))
def test_an_edit_at_any_moment_of_a_move_loses_nothing(
    session_factory, library, tmp_path, monkeypatch, hard_links, moment, edit
):
    dest = tmp_path / "organized"
    original = (library / TARGET).read_bytes()
    editor = Editor(library / TARGET, EDITORS[edit])
    hook(monkeypatch, moment, editor, hard_links)
    job = run_organize(session_factory, dest, move=True, hard_links=hard_links)
    monkeypatch.undo()
    assert editor.left is not None, "the edit never ran: the hook missed its moment"
    contents = every_content(library, dest)
    assert editor.left in contents, "the edited bytes were lost"
    item = next(
        i for i in JobService(session_factory).items(job["id"]) if i["item_key"].endswith(TARGET)
    )
    if item["error_code"] is None:
        # Moved: what was placed is the original, and the edit made a file of its own.
        assert original in contents
    else:
        assert item["error_code"] in KEPT_CODES, item
    # The other photos moved as usual.
    left = {p.name for p in library.iterdir()} - {TARGET}
    assert not {n for n in left if "(kept" not in n}, left
    assert not [p for p in library.iterdir() if p.name.startswith(".pp-")], "a parked file left"


def test_a_source_held_open_by_a_writer_is_kept(session_factory, library, tmp_path, monkeypatch):
    """A program that opened the photo before the move and writes after our last
    check: the lease refuses the unlink while it is open."""
    dest = tmp_path / "organized"
    original = (library / TARGET).read_bytes()
    held: list[int] = []
    real_retire = transfer.retire

    def open_then_retire(place, *args, **kwargs):
        if place.name == TARGET:
            held.append(os.open(library / TARGET, os.O_WRONLY))
        return real_retire(place, *args, **kwargs)

    monkeypatch.setattr(transfer, "retire", open_then_retire)
    job = run_organize(session_factory, dest, move=True, hard_links=False)
    monkeypatch.undo()
    os.write(held[0], b"WRITTEN LATE")
    os.close(held[0])
    codes = {
        i["item_key"].split(":", 1)[1]: i["error_code"] for i in job_items(session_factory, job)
    }
    assert codes[TARGET] == "source_in_use"
    assert (library / TARGET).read_bytes().startswith(b"WRITTEN LATE")
    assert original in every_content(dest), "the placed copy is the original"


def test_without_leases_a_late_write_is_written_back(
    session_factory, library, tmp_path, monkeypatch
):
    """Where leases are unavailable (NFS, SMB), a write through a descriptor opened
    before the move that lands after the unlink is found and its bytes put back."""
    dest = tmp_path / "organized"
    writer = os.open(library / TARGET, os.O_WRONLY)
    monkeypatch.setattr(transfer, "_take_write_lease", lambda fd: False)
    real_unlink = os.unlink

    def unlink_then_write(name, *args, **kwargs):
        ours = os.stat(name, dir_fd=kwargs.get("dir_fd")).st_ino == os.fstat(writer).st_ino
        real_unlink(name, *args, **kwargs)
        if ours:
            os.write(writer, b"WRITTEN AFTER THE UNLINK")

    monkeypatch.setattr(os, "unlink", unlink_then_write)
    job = run_organize(session_factory, dest, move=True, hard_links=False)
    monkeypatch.undo()
    os.close(writer)
    codes = {
        i["item_key"].split(":", 1)[1]: i["error_code"] for i in job_items(session_factory, job)
    }
    assert codes[TARGET] == "source_changed"
    assert (library / TARGET).read_bytes().startswith(b"WRITTEN AFTER THE UNLINK")


def test_an_error_while_a_file_is_parked_gives_it_back_at_once(
    session_factory, library, tmp_path, monkeypatch
):
    """An error nobody foresaw between parking the source and unlinking it: the file
    has its name back before the error goes on, and the job, run again, finishes.
    (A worker killed at that instant: tests/integration/organize/test_organize_parked.py.)"""
    dest = tmp_path / "organized"
    before = {p.name for p in library.iterdir()}

    def fail_after_parking(fd: int):
        raise RuntimeError("something nobody foresaw")

    monkeypatch.setattr(transfer, "_take_write_lease", fail_after_parking)
    service = JobService(session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    job = organize.start_organize(service, dest, TEMPLATE, move=True, hard_links=False).job
    config = WorkerConfig(job_types=(organize.JOB_TYPE,), burst=True, executor="thread")
    workers = WorkerRegistry(session_factory)
    worker = Worker(service, workers, registry, config)
    worker.run_job(service.claim([organize.JOB_TYPE], worker.id))
    monkeypatch.undo()
    assert service.get(job["id"])["state"] == "retry_queued"
    assert {p.name for p in library.iterdir()} == before, "nothing left parked"
    Worker(service, workers, registry, config).run()
    assert service.get(job["id"])["state"] == "succeeded"
    assert not list(library.iterdir()), "everything moved, nothing parked"
    assert len([p for p in dest.rglob("*") if p.is_file()]) == 3


def job_items(session_factory, job) -> list[dict]:
    return JobService(session_factory).items(job["id"])


@pytest.mark.parametrize("moment", ["before_placing", "before_removal"])
def test_a_worker_paused_past_its_lease_never_removes_what_an_undo_put_back(
    session_factory, library, tmp_path, monkeypatch, moment
):
    """Worker A stops (SIGSTOP, a suspended VM) in the middle of a file's move: before
    it places the file, or just before it removes the source. Its lease runs out,
    worker B finishes the job, the user undoes it, and the undo links the file back
    under its name: the very inode A checked. Then A wakes up. What it was about to
    remove is now the only copy: it must stay."""
    dest = tmp_path / "organized"
    # A file of the user's keeps the day's folder (the one A holds open) after the undo.
    (dest / "2023/2023-07-14").mkdir(parents=True)
    (dest / "2023/2023-07-14/notes.txt").write_text("the user's")
    originals = {p.name: p.read_bytes() for p in library.iterdir()}
    service = JobService(session_factory)
    job = organize.start_organize(service, dest, TEMPLATE, move=True).job
    hook = "place" if moment == "before_placing" else "retire"
    with worker_stopped_at(
        session_factory, monkeypatch, organize.JOB_TYPE, hook, lambda place: place.name == TARGET
    ):
        at_once = take_over(session_factory, job["id"], organize.JOB_TYPE)
        assert service.get(job["id"])["state"] == "succeeded"
        undo = organize.start_undo(service, job["id"]).job
        run_worker(session_factory, organize.UNDO_JOB_TYPE, service=at_once)
        assert service.get(undo["id"])["state"] == "succeeded"
        assert {p.name: p.read_bytes() for p in library.iterdir()} == originals
    assert {p.name: p.read_bytes() for p in library.iterdir()} == originals
