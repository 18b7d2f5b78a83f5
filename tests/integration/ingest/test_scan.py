"""The scan job end to end on real files: the catalogue it builds, rescans, bad input."""

from __future__ import annotations

import functools
import hashlib
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.support.import_jobs import run_import

CAMERAS = [("Canon", "EOS R5"), ("NIKON CORPORATION", "NIKON Z 6"), ("Apple", "iPhone 14 Pro")]


def fingerprint(root: Path) -> dict[str, tuple[int, int, str]]:
    """Every regular file's size, mtime and content digest: originals must not change."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            if path.is_file() and not path.is_symlink():
                info = path.stat()
                found[str(path)] = (
                    info.st_size,
                    info.st_mtime_ns,
                    hashlib.sha256(path.read_bytes()).hexdigest(),
                )
    return found


def build_mixed_folder(root: Path) -> dict:
    """≥ 300 files across formats, with exact duplicates and broken files; returns
    what the catalogue must say about them."""
    expected: dict[str, dict] = {}  # relative path -> expected asset fields
    for n in range(240):
        make, model = CAMERAS[n % 3]
        taken = f"2022:{1 + n % 12:02d}:{1 + n % 28:02d} {n % 24:02d}:{n % 60:02d}:07"
        gps = (48.8584 + n / 1000, -(2.2945 + n / 1000), 35.0) if n % 4 == 0 else None
        offset = "+02:00" if n % 2 == 0 else None
        name = f"camera/{n:03d}.jpg"
        photos.jpeg(
            root / name,
            size=(64, 48),
            seed=n,
            taken=taken,
            offset=offset,
            subsec=None,
            make=make,
            model=model,
            gps=gps,
        )
        expected[name] = {
            "taken_local": datetime.strptime(taken, "%Y:%m:%d %H:%M:%S").isoformat(),
            "taken_source": "exif_original",
            "taken_offset_minutes": 120 if offset else None,
            "make": make,
            "model": model,
            "gps": gps,
        }
    for n in range(20):  # no EXIF: the date comes from the file name
        name = f"phone/IMG_202307{10 + n:02d}_101530.png"
        photos.png(root / name, size=(40, 30), seed=1000 + n, taken=None, make=None, model=None)
        expected[name] = {
            "taken_local": f"2023-07-{10 + n:02d}T10:15:30",
            "taken_source": "filename",
            "make": None,
            "model": None,
            "taken_offset_minutes": None,
            "gps": None,
        }
    others = [
        (photos.tiff, "tif", 10),
        (photos.webp, "webp", 10),
        (photos.heic, "heic", 3),
        (photos.dng, "dng", 2),
        (photos.nef, "nef", 2),
        (photos.arw, "arw", 2),
        (functools.partial(photos.maker_raw, make="SAMSUNG", model="NX1"), "srw", 1),
        (functools.partial(photos.maker_raw, make="Hasselblad", model="X2D 100C"), "3fr", 1),
    ]
    seed = 2000
    for factory, ext, count in others:
        for n in range(count):
            seed += 1
            name = f"mixed/{ext}-{n}.{ext}"
            kwargs = {} if ext in ("dng", "nef", "arw", "srw", "3fr") else {"size": (40, 30)}
            factory(
                root / name,
                seed=seed,
                taken="2021:05:06 07:08:09",
                offset="-05:00",
                subsec=None,
                **kwargs,
            )
            expected[name] = {
                "taken_local": "2021-05-06T07:08:09",
                "taken_source": "exif_original",
                "taken_offset_minutes": -300,
            }
    # Exact duplicates: copies of the first ten camera photos.
    for n in range(10):
        copy = root / f"copies/copy-{n}.jpg"
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_bytes((root / f"camera/{n:03d}.jpg").read_bytes())
        expected[f"copies/copy-{n}.jpg"] = expected[f"camera/{n:03d}.jpg"]
    broken = {
        "broken/empty.jpg": "empty_file",
        "broken/truncated.jpg": "corrupt_file",
        "broken/text.jpg": "unsupported_format",
        "broken/bomb.png": "too_many_pixels",
        "broken/loop.jpg": "unreadable_file",
    }
    photos.empty(root / "broken/empty.jpg")
    photos.truncated_jpeg(root / "broken/truncated.jpg", seed=9999)
    photos.text_as_jpeg(root / "broken/text.jpg")
    photos.bomb(root / "broken/bomb.png")
    (root / "broken/notes.txt").write_text("not a photo")
    os.symlink("loop-b.jpg", root / "broken/loop.jpg")
    os.symlink("loop.jpg", root / "broken/loop-b.jpg")
    broken["broken/loop-b.jpg"] = "unreadable_file"
    os.symlink("nowhere.jpg", root / "broken/dangling.jpg")
    broken["broken/dangling.jpg"] = "broken_symlink"
    # Garbage EXIF dates fall through to the file name's date.
    photos.garbage_exif_dates(root / "broken/IMG_20200101_120000.jpg", seed=7777)
    expected["broken/IMG_20200101_120000.jpg"] = {
        "taken_local": "2020-01-01T12:00:00",
        "taken_source": "filename",
    }
    # A name that is not UTF-8.
    odd = os.fsdecode(b"mixed/caf\xe9.jpg")
    photos.jpeg(
        root / odd, size=(32, 24), seed=8888, taken="2019:02:03 04:05:06", offset=None, subsec=None
    )
    expected[odd] = {"taken_local": "2019-02-03T04:05:06", "taken_source": "exif_original"}
    return {"photos": expected, "broken": broken, "ignored": {"broken/notes.txt"}}


@pytest.fixture
def mixed(tmp_path) -> tuple[Path, dict]:
    root = tmp_path / "photos"
    return root, build_mixed_folder(root)


def test_import_of_a_mixed_folder_gives_the_expected_catalogue(session_factory, mixed):
    root, spec = mixed
    before = fingerprint(root)
    outcome = run_import(session_factory, root)
    catalog = Catalog(session_factory)

    files = {paths.from_text(f["path"]): f for f in catalog.files()}
    assert len(spec["photos"]) + len(spec["broken"]) >= 300
    assert set(files) == set(spec["photos"]) | set(spec["broken"]) | spec["ignored"]
    # not media: no asset, no failure
    assert {p: f["state"] for p, f in files.items() if f["state"] != "present"} == {
        p: "failed" for p in spec["broken"]
    } | dict.fromkeys(spec["ignored"], "ignored")
    assert {paths.from_text(k): v for k, v in outcome["failed"].items()} == spec["broken"]
    assert {p: f["error_code"] for p, f in files.items() if p in spec["broken"]} == spec["broken"]

    assets_by_id = {a["id"]: a for a in catalog.assets(limit=10_000)}
    assert len(assets_by_id) == len(spec["photos"]) - 10  # ten copies share an asset
    for path, want in spec["photos"].items():
        asset = assets_by_id[files[path]["asset_id"]]
        for field in ("taken_local", "taken_source", "taken_offset_minutes", "make", "model"):
            if field in want:
                assert asset[field] == want[field], (path, field)
        if want.get("gps"):
            lat, lon, alt = want["gps"]
            assert asset["gps_latitude"] == pytest.approx(lat, abs=1e-6), path
            assert asset["gps_longitude"] == pytest.approx(lon, abs=1e-6), path
            assert asset["gps_altitude"] == pytest.approx(alt, abs=1e-3), path
        elif "gps" in want:
            assert asset["gps_latitude"] is None, path
    offset_photo = assets_by_id[files["camera/000.jpg"]["asset_id"]]
    # 2022-01-01 00:00:07 at +02:00
    assert offset_photo["taken_utc"] == datetime(2021, 12, 31, 22, 0, 7, tzinfo=UTC)
    groups = catalog.duplicates()
    assert sorted(sorted(paths.from_text(f["path"]) for f in g["files"]) for g in groups) == [
        sorted([f"camera/{n:03d}.jpg", f"copies/copy-{n}.jpg"]) for n in range(10)
    ]
    assert fingerprint(root) == before, "an original was modified"
    # Failures are remembered like any file (broken links by the link itself): an
    # unchanged folder has nothing to read again, and nothing fails again.
    again = run_import(session_factory, root)
    assert (again["progress"]["total"], again["failed"]) == (0, {})


def test_rescan_reads_only_what_changed(session_factory, tmp_path):
    root = tmp_path / "photos"
    for n in range(12):
        photos.jpeg(
            root / f"a/{n}.jpg", size=(32, 24), seed=n, taken=f"2023:01:{n + 1:02d} 10:00:00"
        )
    first = run_import(session_factory, root)
    assert first["progress"]["total"] == 12
    unchanged = run_import(session_factory, root)
    assert unchanged["progress"]["total"] == 0  # nothing to read: one stat per file

    photos.jpeg(root / "a/new.jpg", size=(32, 24), seed=100)  # added
    (root / "a/0.jpg").unlink()  # deleted
    photos.jpeg(root / "a/1.jpg", size=(32, 24), seed=101)  # modified in place
    (root / "b").mkdir()
    (root / "a/2.jpg").rename(root / "b/moved.jpg")  # moved
    again = run_import(session_factory, root)
    assert again["progress"]["total"] == 3  # new, modified, moved-to

    catalog = Catalog(session_factory)
    files = {f["path"]: f for f in catalog.files()}
    assert files["a/0.jpg"]["state"] == "missing"
    assert files["a/new.jpg"]["state"] == "present"
    assert "a/2.jpg" not in files  # the moved file's row followed it
    assert files["b/moved.jpg"]["state"] == "present"
    hashes = {a["id"]: a["content_hash"] for a in catalog.assets(limit=100)}
    assert hashes[files["a/1.jpg"]["asset_id"]] != hashes.get(0)
    assert len([f for f in files.values() if f["state"] == "present"]) == 12
    assert catalog.duplicates() == []


def test_a_batch_without_one_readable_photo_is_recorded_all_the_same(session_factory, tmp_path):
    # Every report of such a batch skips the place lookup; its rows were once dropped
    # with it (the batch's list was cleared before its rows were written).
    root = tmp_path / "photos"
    root.mkdir()
    (root / "README.txt").write_text("not media\n")
    (root / "notes.txt").write_text("nor this\n")
    (root / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a whole jpeg")
    outcome = run_import(session_factory, root)
    assert outcome["failed"] == {"broken.jpg": "corrupt_file"}
    recorded = {(f["path"], f["state"]) for f in Catalog(session_factory).files()}
    assert recorded == {
        ("README.txt", "ignored"),
        ("notes.txt", "ignored"),
        ("broken.jpg", "failed"),
    }


def test_file_deleted_between_listing_and_reading_fails_its_item(
    session_factory, tmp_path, monkeypatch
):
    from photo_pipeline.pipeline.ingest import scan

    root = tmp_path / "photos"
    photos.jpeg(root / "kept.jpg", size=(32, 24), seed=1)
    real_walk = scan.walk

    def walk_with_a_ghost(folder, **options):
        yield from real_walk(folder, **options)
        yield "ghost.jpg", (1, 1, 1)  # listed, then gone before it is read

    monkeypatch.setattr(scan, "walk", walk_with_a_ghost)
    outcome = run_import(session_factory, root)
    assert outcome["failed"] == {"ghost.jpg": "file_vanished"}
    assert [f["path"] for f in Catalog(session_factory).files()] == ["kept.jpg"]


@pytest.mark.skipif(
    os.geteuid() == 0,
    reason="root reads files whatever their mode; "
    "the permission path is covered in tests/unit/media/test_media_errors.py",
)
def test_unreadable_file_fails_its_item(session_factory, tmp_path):
    root = tmp_path / "photos"
    locked = photos.jpeg(root / "locked.jpg", size=(32, 24), seed=1)
    locked.chmod(0)
    try:
        assert run_import(session_factory, root)["failed"] == {"locked.jpg": "unreadable_file"}
    finally:
        locked.chmod(0o644)


def test_a_reader_raising_what_it_never_should_fails_that_file_only(
    session_factory, tmp_path, monkeypatch
):
    """A parser's bug on one odd file (injected here: the known ones are fixed) fails
    its item with ``unexpected_error``; the other files are catalogued."""
    root = tmp_path / "photos"
    for n in range(3):
        photos.jpeg(root / f"ok{n}.jpg", size=(32, 24), seed=n)
    photos.jpeg(root / "odd.jpg", size=(32, 24), seed=9)
    read = scan.read_metadata

    def buggy(path, **kwargs):
        if Path(path).name == "odd.jpg":  # the pinned stand-in keeps the name
            raise OverflowError("date value out of range")
        return read(path, **kwargs)

    monkeypatch.setattr(scan, "read_metadata", buggy)
    outcome = run_import(session_factory, root)
    assert outcome["failed"] == {"odd.jpg": "unexpected_error"}
    [item] = JobService(session_factory).items(outcome["job"]["id"], states=["failed"])
    assert "OverflowError: date value out of range" in item["error_message"]
    present = {f["path"] for f in Catalog(session_factory).files() if f["state"] == "present"}
    assert present == {"ok0.jpg", "ok1.jpg", "ok2.jpg"}


def test_an_import_carries_the_libraries_video_time_limit(session_factory, tmp_path):
    from photo_pipeline.config import Settings

    root = tmp_path / "photos"
    photos.jpeg(root / "a.jpg", size=(32, 24), seed=1)
    settings = Settings(tmp_path / "home", "unused://", video_time_limit=7.5)
    service = JobService(session_factory)
    scan_job, render_job, _ = import_folders(
        service, Catalog(session_factory), [root], follow_up=settings
    )
    assert scan_job["params"]["video_time_limit"] == 7.5  # a video's headers
    assert render_job["params"]["settings"]["video_time_limit"] == 7.5  # its poster frame
