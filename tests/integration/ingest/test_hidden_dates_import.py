"""An import of files whose capture date hides from the fast EXIF reader (in XMP only, a
maker note only, QuickTime keys only) catalogues each with its real instant and the
source it came from, on both databases; files the fast reader dates keep their date."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near import similar  # noqa: F401  (their job types)
from tests.factories import dated, photos, videos
from tests.factories.dated import require_exiftool
from tests.support.import_jobs import catalogue_by_path, run_worker_two_threads


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def write_card(root) -> dict[str, tuple[str, str, datetime | None]]:
    """The files, and each one's expected (source, local time, UTC instant)."""
    root.mkdir(parents=True)
    dated.jpeg_with_xmp_date(root / "edited.jpg", seed=1)
    dated.png_with_xmp_date(root / "scan.png", seed=2)
    dated.jpeg_with_pentax_date(root / "IMGP0003.JPG", seed=3)
    dated.jpeg_with_panasonic_date(root / "P1000004.JPG", seed=4)
    dated.mov_with_quicktime_date(root / "MVI_0005.MOV", seed=5)
    dated.mov_with_xmp_date(root / "clip.mov", seed=6)
    photos.jpeg(root / "IMG_0007.JPG", size=(64, 48), seed=7, subsec=None)
    photos.png(root / "plain.png", size=(64, 48), seed=8, taken=None)
    return {
        "edited.jpg": (
            "xmp_original",
            "2021-05-06T07:08:09.250000",
            datetime(2021, 5, 5, 22, 8, 9, 250000, tzinfo=UTC),
        ),
        "scan.png": ("xmp_date_created", "2019-12-31T23:59:58", utc(2020, 1, 1, 4, 59, 58)),
        "IMGP0003.JPG": ("makernote", "2018-03-04T05:06:07", utc(2018, 3, 4, 4, 6, 7)),
        "P1000004.JPG": ("makernote", "2017-08-09T10:11:12", None),  # no zone: floating
        "MVI_0005.MOV": ("quicktime_local", "2016-06-07T08:09:10", utc(2016, 6, 7, 5, 9, 10)),
        "clip.mov": ("xmp_original", "2015-04-05T06:07:08", utc(2015, 4, 5, 0, 37, 8)),
        "IMG_0007.JPG": ("exif_original", "2023-07-14T10:15:30", utc(2023, 7, 14, 8, 15, 30)),
    }


def test_import_dates_files_by_their_hidden_dates(session_factory, tmp_path) -> None:
    require_exiftool()
    root = tmp_path / "card"
    expected = write_card(root)
    service = JobService(session_factory)
    catalog = Catalog(session_factory)
    [job] = import_folders(service, catalog, [root])
    run_worker_two_threads(service, session_factory)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert service.progress(job["id"])["by_state"].get("failed", 0) == 0

    rows = catalogue_by_path(catalog)
    found = {
        path: (
            row["asset"]["taken_source"],
            row["asset"]["taken_local"],
            row["asset"]["taken_utc"],
        )
        for path, row in rows.items()
        if path in expected
    }
    assert found == expected
    # nothing anywhere: the copy's mtime, as before
    assert rows["plain.png"]["asset"]["taken_source"] == "mtime"


@pytest.mark.parametrize("backend", ["sqlite"], indirect=True)
def test_a_video_of_each_kind_keeps_the_fast_readers_date(session_factory, tmp_path) -> None:
    require_exiftool()
    root = tmp_path / "phone"
    videos.iphone_mov(root / "IMG_0001.MOV", codec="libx264", seconds=1)
    videos.h264_mp4(root / "clip.mp4", seconds=1)
    videos.android_mp4(root, seconds=1)
    service = JobService(session_factory)
    catalog = Catalog(session_factory)
    import_folders(service, catalog, [root])
    run_worker_two_threads(service, session_factory)
    rows = catalogue_by_path(catalog)
    assert {path: row["asset"]["taken_source"] for path, row in rows.items()} == {
        "IMG_0001.MOV": "quicktime_local",
        "clip.mp4": "quicktime_utc",
        "VID_20230714_101530.mp4": "filename",
    }
