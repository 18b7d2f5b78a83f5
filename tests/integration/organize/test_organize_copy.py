"""How organize copies a file: hashed as read, copied by the kernel (copy_file_range),
verified on disk. A source changed between its hash and its copy is never placed;
where the kernel cannot copy, the bytes are read and written instead."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from photo_pipeline.jobs import JobService, JobState
from tests.support.photo_jobs import (
    build_library,
    run_organize,
    scan_folders,
    tree,
)

TARGET = "IMG_0002.jpg"


@pytest.fixture
def source(tmp_path, session_factory) -> Path:
    root = tmp_path / "photos"
    build_library(root)
    scan_folders(session_factory, root)
    return root


def test_without_the_kernel_copy_the_same_bytes_are_placed(
    session_factory, source, tmp_path, monkeypatch
):
    def refuse(*args) -> int:
        raise OSError(errno.EXDEV, "Invalid cross-device link")

    monkeypatch.setattr(os, "copy_file_range", refuse)
    before = tree(source)
    job = run_organize(session_factory, tmp_path / "organized")
    monkeypatch.undo()
    assert job["state"] == JobState.SUCCEEDED
    items = JobService(session_factory).items(job["id"])
    assert {i["state"] for i in items} == {"succeeded"}
    placed = tree(tmp_path / "organized")
    assert len(placed) == len(items)
    assert {h for h, _ in placed.values()} <= {h for h, _ in before.values()}
    assert tree(source) == before


@pytest.mark.parametrize(
    ("same_mtime", "code"),
    [(False, "content_changed"), (True, "copy_mismatch")],
    ids=["mtime_moves", "mtime_kept"],
)
def test_a_source_changed_between_its_hash_and_its_copy_is_not_placed(
    session_factory, source, tmp_path, monkeypatch, same_mtime, code
):
    """Another program rewrites the photo in place after organize hashed it and
    before the kernel copies it. With a new mtime the source's identity gives it
    away; with the same mtime (a coarse clock), the hash of the copy does."""
    dest = tmp_path / "organized"
    target = next(source.rglob(TARGET))
    real_copy = os.copy_file_range
    edited = []

    def edit_then_copy(src: int, dst: int, count: int, *offsets) -> int:
        if not edited and os.readlink(f"/proc/self/fd/{src}") == str(target):
            info = target.stat()
            with open(target, "r+b") as f:
                f.seek(info.st_size // 2)
                f.write(b"EDITED")
            if same_mtime:
                os.utime(target, ns=(info.st_atime_ns, info.st_mtime_ns))
            edited.append(target.read_bytes())
        return real_copy(src, dst, count, *offsets)

    monkeypatch.setattr(os, "copy_file_range", edit_then_copy)
    job = run_organize(session_factory, dest)
    monkeypatch.undo()
    assert edited, "the edit never ran"
    codes = {
        Path(i["item_key"].split(":", 1)[1]).name: i["error_code"]
        for i in JobService(session_factory).items(job["id"])
    }
    assert codes.pop(TARGET) == code
    assert set(codes.values()) == {None}, "the other photos were placed"
    assert target.read_bytes() == edited[0], "the edit is untouched"
    assert edited[0] not in [p.read_bytes() for p in dest.rglob("*") if p.is_file()]
    assert not [p for p in dest.rglob(".pp-*")], "no temp file left"
