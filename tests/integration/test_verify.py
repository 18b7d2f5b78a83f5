"""verify: re-hash the originals, report bit rot and missing files, change nothing."""

from __future__ import annotations

import json
import os

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.verify import start_verify, verify_report
from tests.factories import photos
from tests.support.photo_jobs import run_worker, scan_folders, tree


def build(root) -> None:
    for n in range(8):
        photos.jpeg(root / f"day/IMG_{n}.jpg", size=(24, 16), seed=n)
    (root / "day/notes.txt").write_text("no photo: not verified")


def catalogued(session_factory) -> list[dict]:
    return [
        {k: v for k, v in row.items() if k != "verified_at"}
        for row in Catalog(session_factory).files()
    ]


def flip_one_bit(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_verify_reports_bit_rot_and_missing_files(session_factory, tmp_path):
    root = tmp_path / "photos"
    build(root)
    scan_folders(session_factory, root)
    flip_one_bit(root / "day/IMG_2.jpg")
    (root / "day/IMG_5.jpg").unlink()
    before = tree(root)
    rows_before = catalogued(session_factory)

    service = JobService(session_factory)
    job = start_verify(service).job
    run_worker(session_factory, "verify")
    report = verify_report(service, job["id"])
    assert report["job"]["state"] == JobState.SUCCEEDED
    assert (report["checked"], report["ok"]) == (8, 6)
    assert [f["path"] for f in report["changed"]] == [str(root / "day/IMG_2.jpg")]
    assert [f["path"] for f in report["missing"]] == [str(root / "day/IMG_5.jpg")]
    assert report["unreadable_file"] == []
    # Verify only reports: files and catalogue are as they were (but for when each
    # file was last found intact, which a rolling verify goes by).
    assert tree(root) == before
    assert catalogued(session_factory) == rows_before


def test_verify_takes_the_library_lock(session_factory, tmp_path):
    service = JobService(session_factory)
    first = start_verify(service).job
    for attempt in (
        lambda: start_verify(service).job,
        lambda: organize.start_organize(service, tmp_path / "out", organize.DEFAULT_TEMPLATE).job,
    ):
        try:
            attempt()
        except organize.LibraryBusy as refused:
            assert refused.code == "lock_held" and first["id"] in refused.detail
        else:
            raise AssertionError("a second library job was accepted")


def test_verify_command(cli, session_factory, tmp_path):
    root = tmp_path / "photos"
    build(root)
    scan_folders(session_factory, root)
    code, out, _ = cli("verify", "--wait", "--json")
    assert code == 0, out
    clean = json.loads(out)
    assert (clean["checked"], clean["ok"], clean["changed"], clean["missing"]) == (8, 8, [], [])

    flip_one_bit(root / "day/IMG_0.jpg")
    # Replaced by a link out of the roots: a finding of its own kind, told too.
    outside = photos.jpeg(tmp_path / "outside.jpg", size=(24, 16), seed=99)
    (root / "day/IMG_1.jpg").unlink()
    (root / "day/IMG_1.jpg").symlink_to(outside)
    code, out, _ = cli("verify", "--wait")
    assert code == 5  # the job succeeded; the changed file failed its item
    assert "1 changed" in out and f"changed {root / 'day/IMG_0.jpg'}" in out
    assert "6 ok" in out and "1 symlink_outside_roots" in out
    assert f"symlink_outside_roots {root / 'day/IMG_1.jpg'}" in out


def test_verify_refuses_what_is_not_a_regular_file_inside_the_roots(session_factory, tmp_path):
    root = tmp_path / "photos"
    build(root)
    scan_folders(session_factory, root)
    # A FIFO and a folder where photos were: unreadable, and the FIFO does not block.
    (root / "day/IMG_3.jpg").unlink()
    os.mkfifo(root / "day/IMG_3.jpg")
    (root / "day/IMG_4.jpg").unlink()
    (root / "day/IMG_4.jpg").mkdir()
    # A link to the same bytes elsewhere inside the roots is the file: fine.
    (root / "day/IMG_6.jpg").rename(root / "kept.jpg")
    (root / "day/IMG_6.jpg").symlink_to(root / "kept.jpg")
    # Moved out of the roots: missing.
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / "day/IMG_7.jpg").rename(outside / "IMG_7.jpg")
    service = JobService(session_factory)
    job = start_verify(service).job
    run_worker(session_factory, "verify")
    report = verify_report(service, job["id"])
    assert (report["checked"], report["ok"]) == (8, 5)
    unreadable = {f["path"]: f["message"] for f in report["unreadable_file"]}
    assert unreadable == {
        str(root / "day/IMG_3.jpg"): f"{root / 'day/IMG_3.jpg'}: not a regular file",
        str(root / "day/IMG_4.jpg"): f"{root / 'day/IMG_4.jpg'}: not a regular file",
    }
    assert [f["path"] for f in report["missing"]] == [str(root / "day/IMG_7.jpg")]

    # Their folder turned into a link out of the roots: every file refused, unread.
    (root / "day").rename(root / "day-was")
    (root / "day").symlink_to(outside)
    job = start_verify(service).job
    run_worker(session_factory, "verify")
    report = verify_report(service, job["id"])
    assert [f["path"] for f in report["symlink_outside_roots"]] == [
        str(root / "day" / name) for name in sorted(f"IMG_{n}.jpg" for n in range(8))
    ]
