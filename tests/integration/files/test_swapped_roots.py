"""Confinement holds at run time (#28): a folder a job was queued with (organize's
destination, a source, dedupe's quarantine, an undo's target) swapped for a symlink to a
folder outside, after the job was checked and queued, at each point before a file
operation. The swap is made by a hook at the named ``transfer`` call (or before the
worker starts), so each case is deterministic. In every case nothing outside is read
into the library, written, moved or deleted, the outside folder is never registered as
a source and no photo is lost; a swap before a file's folder is opened fails its item
(or the job) with a clear code. (A file whose folders were opened before the swap is
finished there, by descriptor: the items in flight may all succeed.)"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.config import Settings
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import dedupe, organize
from photo_pipeline.pipeline.files import resolve, transfer
from photo_pipeline.pipeline.files.roots import PathOutsideRoots
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.ingest.imports import start_import
from photo_pipeline.pipeline.library.catalog import PRESENT, Catalog
from tests.factories import photos
from tests.support.dedupe_library import same_bytes
from tests.support.file_opens import watch_opens
from tests.support.photo_jobs import run_worker, scan_folders

ORGANIZE = (organize.JOB_TYPE, organize.UNDO_JOB_TYPE)
DEDUPE = (dedupe.JOB_TYPE, dedupe.UNDO_JOB_TYPE, dedupe.PURGE_JOB_TYPE)
# What an item (or the job) may end with once its folder was swapped.
REFUSED = {"root_changed", "symlinked_folder"}


def swap_for_link(folder: Path, outside: Path) -> Path:
    """``folder`` becomes a symlink to ``outside``; returns where the real one went."""
    real = folder.with_name(folder.name + ".real")
    folder.rename(real)
    folder.symlink_to(outside, target_is_directory=True)
    return real


def snapshot(folder: Path) -> dict[str, tuple[int, int, int, bytes]]:
    """Every file below ``folder``: (inode, size, mtime, bytes), by relative path."""
    found = {}
    for where, _, names in os.walk(folder):
        for name in names:
            path = Path(where) / name
            info = path.stat()
            found[str(path.relative_to(folder))] = (
                info.st_ino,
                info.st_size,
                info.st_mtime_ns,
                path.read_bytes(),
            )
    return found


def contents(*folders: Path) -> list[bytes]:
    return sorted(
        (Path(w) / n).read_bytes() for f in folders for w, _, names in os.walk(f) for n in names
    )


def lost(before: list[bytes], *folders: Path) -> list[bytes]:
    """What of ``before`` no file below ``folders`` holds (an extra copy left is no loss)."""
    return list((Counter(before) - Counter(contents(*folders))).elements())


def swap_at(monkeypatch, hook: str, swap: Callable[[], Any], root: Path | None = None) -> None:
    """At the first call of ``transfer.<hook>`` (whose first argument is ``root``, when
    given: ``spot``'s), make the swap, then go on with the call."""
    real = getattr(transfer, hook)
    swapped: list[bool] = []

    def swap_then_call(*args, **kwargs):
        if not swapped and (root is None or args[0] == str(root)):
            swap()
            swapped.append(True)
        return real(*args, **kwargs)

    monkeypatch.setattr(transfer, hook, swap_then_call)


def outcome(session_factory, job_id: str) -> tuple[str, set[str | None]]:
    service = JobService(session_factory)
    job = service.get(job_id)
    return job["state"], {i["error_code"] for i in service.items(job_id)} | {job["error_code"]}


def test_both_ways_of_opening_refuse_a_link_on_the_path(tmp_path, monkeypatch):
    (tmp_path / "a/b").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "a", target_is_directory=True)
    ways = [False, True] if resolve.have_openat2() else [True]
    for walk in ways:
        monkeypatch.setattr(resolve, "_unavailable", walk)
        os.close(resolve.open_folder_no_links(str(tmp_path / "a/b")))
        with pytest.raises(OSError) as refused:
            resolve.open_folder_no_links(str(tmp_path / "link/b"))
        assert refused.value.errno == 40  # ELOOP, whichever way
        root = resolve.open_folder_no_links(str(tmp_path))
        try:
            with pytest.raises(OSError):
                resolve.open_folder_beneath(root, "link/b")
            with pytest.raises(OSError):
                resolve.open_folder_beneath(root, "../")
        finally:
            os.close(root)


# ── organize: the destination swapped ─────────────────────────────────────────
@pytest.fixture
def scanned(session_factory, tmp_path) -> Path:
    source = tmp_path / "allowed/photos"
    for n in range(4):
        photos.jpeg(source / f"IMG_{n}.jpg", size=(24, 16), seed=n, taken="2023:07:14 10:00:00")
    scan_folders(session_factory, source)
    (tmp_path / "outside").mkdir()
    return source


@pytest.mark.parametrize(
    ("move", "hook"),
    [(False, None), (False, "spot"), (False, "place"), (True, "spot"), (True, "retire")],
)
def test_organize_never_writes_through_a_destination_swapped_for_a_link(
    session_factory, tmp_path, monkeypatch, scanned, move, hook
):
    before = contents(scanned)
    outside, dest = tmp_path / "outside", tmp_path / "allowed/dest/o1"
    dest.mkdir(parents=True)
    service = JobService(session_factory)
    job = organize.start_organize(service, dest, "{original_name}.{ext}", move=move).job

    def swap() -> None:
        swap_for_link(dest, outside)

    if hook is None:
        swap()  # after the check, before the worker runs
    else:
        swap_at(monkeypatch, hook, swap, dest if hook == "spot" else None)
    run_worker(session_factory, *ORGANIZE)

    assert snapshot(outside) == {}, "organize wrote outside the roots"
    assert str(outside) not in Catalog(session_factory).source_paths()
    state, codes = outcome(session_factory, job["id"])
    if hook in (None, "spot"):  # later, every file in flight may be done already
        assert codes & REFUSED, codes
    assert not lost(before, scanned, dest.with_name("o1.real")), codes
    if hook is None:
        assert state == JobState.FAILED  # refused before its plan read the destination


def test_organize_undo_never_writes_through_a_source_swapped_for_a_link(
    session_factory, tmp_path, monkeypatch, scanned
):
    before = contents(scanned)
    outside, dest = tmp_path / "outside", tmp_path / "allowed/dest"
    service = JobService(session_factory)
    done = organize.start_organize(service, dest, "{original_name}.{ext}", move=True).job
    run_worker(session_factory, *ORGANIZE)
    assert contents(dest) == before and contents(scanned) == []
    undo = organize.start_undo(service, done["id"]).job
    swap_for_link(scanned, outside)
    run_worker(session_factory, *ORGANIZE)

    assert snapshot(outside) == {}, "the undo wrote outside the roots"
    assert contents(dest) == before, "the undo lost a photo"
    assert outcome(session_factory, undo["id"])[1] & REFUSED


# ── dedupe: a source, the quarantine and an undo's target swapped ─────────────
@pytest.fixture
def duplicated(session_factory, tmp_path) -> tuple[Path, Path]:
    """A source with two exact copies of three photos, and outside it a folder with the
    same relative paths and the same bytes: what a swapped link would lead to."""
    source, outside = tmp_path / "allowed/photos", tmp_path / "outside"
    for n in range(3):
        original = photos.jpeg(source / f"card/IMG_{n}.jpg", size=(24, 16), seed=n)
        os.utime(original, ns=(10**18, 10**18))  # older: the keeper
        same_bytes(original, source / f"backup/IMG_{n}.jpg", 1)
    for path in source.rglob("*.jpg"):
        same_bytes(path, outside / path.relative_to(source), 1)
    scan_folders(session_factory, source)
    return source, outside


@pytest.mark.parametrize("hook", [None, "spot", "retire"])
def test_dedupe_never_moves_an_outside_file_through_a_source_swapped_for_a_link(
    session_factory, tmp_path, monkeypatch, duplicated, hook
):
    source, outside = duplicated
    before, outside_before = contents(source), snapshot(outside)
    job = dedupe.start_dedupe(JobService(session_factory), tmp_path / "home").job

    def swap() -> None:
        swap_for_link(source, outside)

    if hook is None:
        swap()
    else:
        swap_at(monkeypatch, hook, swap, source if hook == "spot" else None)
    run_worker(session_factory, *DEDUPE)

    assert snapshot(outside) == outside_before, "dedupe touched a file outside the roots"
    quarantine = tmp_path / "home/quarantine"
    outside_inodes = {ino for ino, *_ in outside_before.values()}
    assert not {ino for ino, *_ in snapshot(quarantine).values()} & outside_inodes
    real = source.with_name("photos.real")
    assert contents(real, quarantine) == before, "a photo was lost"
    if hook in (None, "spot"):
        assert outcome(session_factory, job["id"])[1] & REFUSED


@pytest.mark.parametrize("hook", [None, "place"])
def test_dedupe_undo_never_writes_through_a_source_swapped_for_a_link(
    session_factory, tmp_path, monkeypatch, duplicated, hook
):
    source, _ = duplicated
    empty = tmp_path / "empty-outside"
    empty.mkdir()
    before = contents(source)
    service = JobService(session_factory)
    done = dedupe.start_dedupe(service, tmp_path / "home").job
    run_worker(session_factory, *DEDUPE)
    quarantine = tmp_path / "home/quarantine"
    assert len(contents(quarantine)) == 3
    undo = dedupe.start_undo(service, done["id"]).job

    def swap() -> None:
        swap_for_link(source, empty)

    if hook is None:
        swap()
    else:
        swap_at(monkeypatch, hook, swap)
    run_worker(session_factory, *DEDUPE)

    assert snapshot(empty) == {}, "the undo wrote outside the roots"
    assert contents(source.with_name("photos.real"), quarantine) == before, "a photo was lost"
    if hook is None:
        assert outcome(session_factory, undo["id"])[1] & REFUSED


def test_purge_never_deletes_through_a_quarantine_swapped_for_a_link(
    session_factory, tmp_path, duplicated
):
    service = JobService(session_factory)
    done = dedupe.start_dedupe(service, tmp_path / "home").job
    run_worker(session_factory, *DEDUPE)
    held = Path(dedupe.quarantine_folder(tmp_path / "home", done["id"]))
    # Outside: the very names and bytes the quarantine holds.
    bait = tmp_path / "bait"
    for path in held.rglob("*.jpg"):
        same_bytes(path, bait / path.relative_to(held), 1)
    bait_before = snapshot(bait)
    purge = dedupe.start_purge(service, tmp_path / "home", 0).job
    real = swap_for_link(held, bait)
    run_worker(session_factory, *DEDUPE)

    assert snapshot(bait) == bait_before, "purge deleted files outside the quarantine"
    assert len(contents(real)) == 3, "purge deleted through the link's real folder"
    assert outcome(session_factory, purge["id"])[1] & REFUSED


# ── the roots a job was queued under, carried and enforced when it runs ───────
def test_a_job_queued_under_roots_refuses_a_source_registered_outside_them_since(
    session_factory, tmp_path, duplicated
):
    _, outside = duplicated
    allowed = [str(tmp_path / "allowed")]
    service = JobService(session_factory)
    deduping = dedupe.start_dedupe(service, tmp_path / "home", roots=allowed).job
    # Registered after the API checked the sources (by the CLI, say): its copies of
    # the same bytes would be planned over.
    scan_folders(session_factory, outside)
    outside_before = snapshot(outside)
    run_worker(session_factory, *DEDUPE)
    organizing = organize.start_organize(
        service, tmp_path / "allowed/dest", "{original_name}.{ext}", move=True, roots=allowed
    ).job
    run_worker(session_factory, *ORGANIZE)

    assert snapshot(outside) == outside_before
    for job in (deduping, organizing):
        state, codes = outcome(session_factory, job["id"])
        assert (state, codes) == (JobState.FAILED, {"path_outside_roots"}), job["job_type"]


def test_a_scan_never_lists_a_source_swapped_for_a_link(session_factory, tmp_path, scanned):
    outside = tmp_path / "outside"
    photos.jpeg(outside / "not_yours.jpg", size=(24, 16), seed=77)
    source = Catalog(session_factory).add_source(scanned)  # registered already: its row
    swap_for_link(scanned, outside)
    service = JobService(session_factory)
    job = service.enqueue(
        scan.JOB_TYPE,
        lock=scan.lock_for(source["id"]),
        params={"sources": [{"id": source["id"], "path": source["path"]}]},
    )
    with watch_opens(outside) as opens:
        run_worker(session_factory, scan.JOB_TYPE)
        assert opens.seen() == [], "the scan opened the folder the link leads to"
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    catalogued = Catalog(session_factory).files()
    assert sorted(f["path"] for f in catalogued) == [f"IMG_{n}.jpg" for n in range(4)]
    assert {f["state"] for f in catalogued} == {PRESENT}, "files were marked missing"


def test_an_import_never_registers_the_folder_a_swapped_link_leads_to(session_factory, tmp_path):
    allowed, outside = tmp_path / "allowed", tmp_path / "outside"
    card = allowed / "card"
    photos.jpeg(card / "IMG_0.jpg", size=(24, 16), seed=0)
    photos.jpeg(outside / "not_yours.jpg", size=(24, 16), seed=1)
    checked = card.resolve()  # what the API's check found inside the allowed roots
    swap_for_link(card, outside)  # ... and what the folder is when it is registered
    settings = Settings.from_env({"PHOTO_PIPELINE_HOME": str(tmp_path / "home")})
    catalog = Catalog(session_factory)
    with pytest.raises(PathOutsideRoots):
        start_import(JobService(session_factory), catalog, [checked], settings, roots=[allowed])
    assert catalog.source_paths() == []
