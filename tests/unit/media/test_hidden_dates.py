"""Capture dates kept where the fast EXIF reader does not look (XMP, maker notes,
QuickTime keys), read from real files through a real exiftool; and the exiftool pool's
behaviour on a hung file, a killed process, many threads and a missing exiftool."""

from __future__ import annotations

import logging
import os
import signal
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime

import pytest

from photo_pipeline.media import exiftool, read_metadata
from photo_pipeline.media.capture_time import SOURCES, CaptureTime
from photo_pipeline.media.exiftool import ExiftoolPool, ExiftoolTimeout
from photo_pipeline.media.hidden_dates import REQUEST, hidden_capture_time, with_hidden_dates
from tests.factories import dated, photos, videos
from tests.factories.dated import require_exiftool


@pytest.fixture(autouse=True)
def _exiftool_installed() -> None:
    require_exiftool()


@pytest.fixture
def pool():
    made = ExiftoolPool(time_limit=20)
    yield made
    made.close()


def taken(path) -> tuple[str, datetime, int | None]:
    when = read_metadata(path, isolate_video=True).taken
    return when.source, when.local, when.offset_minutes


# ── real files ───────────────────────────────────────────────────────────────
def test_a_jpeg_dated_only_in_xmp(tmp_path) -> None:
    path = dated.jpeg_with_xmp_date(tmp_path)
    assert taken(path) == ("xmp_original", datetime(2021, 5, 6, 7, 8, 9, 250000), 540)
    when = read_metadata(path).taken
    assert when.utc == datetime(2021, 5, 5, 22, 8, 9, 250000, tzinfo=UTC)


def test_a_png_dated_only_in_xmp(tmp_path) -> None:
    path = dated.png_with_xmp_date(tmp_path)
    assert taken(path) == ("xmp_date_created", datetime(2019, 12, 31, 23, 59, 58), -300)


def test_xmp_create_date_is_the_digitized_date(tmp_path) -> None:
    path = dated.jpeg_with_xmp_date(tmp_path, xmp_CreateDate="2020-02-03T04:05:06Z")
    assert taken(path) == ("xmp_create_date", datetime(2020, 2, 3, 4, 5, 6), 0)


def test_a_pentax_date_only_in_its_maker_note_with_the_exif_zone(tmp_path) -> None:
    path = dated.jpeg_with_pentax_date(tmp_path)
    assert taken(path) == ("makernote", datetime(2018, 3, 4, 5, 6, 7), 60)


def test_a_panasonic_date_only_in_its_maker_note(tmp_path) -> None:
    path = dated.jpeg_with_panasonic_date(tmp_path)
    assert taken(path) == ("makernote", datetime(2017, 8, 9, 10, 11, 12), None)


def test_a_mov_dated_by_a_quicktime_date_key(tmp_path) -> None:
    path = dated.mov_with_quicktime_date(tmp_path)
    assert taken(path) == ("quicktime_local", datetime(2016, 6, 7, 8, 9, 10), 180)


def test_a_mov_dated_only_in_its_xmp(tmp_path) -> None:
    path = dated.mov_with_xmp_date(tmp_path)
    assert taken(path) == ("xmp_original", datetime(2015, 4, 5, 6, 7, 8), 330)


def test_exif_date_time_original_wins_over_xmp(tmp_path, pool) -> None:
    path = dated.jpeg_with_xmp_date(tmp_path, taken="2023:07:14 10:15:30")
    assert taken(path)[:2] == ("exif_original", datetime(2023, 7, 14, 10, 15, 30))
    # and exiftool is not even asked
    fast = CaptureTime(datetime(2023, 7, 14, 10, 15, 30), None, "exif_original")
    with open(path, "rb") as fp:
        assert with_hidden_dates(fast, fp, path, 20, pool) is fast
    assert pool.started == 0


def test_xmp_original_wins_over_exif_digitized(tmp_path) -> None:
    plain = photos.jpeg(tmp_path, taken=None, digitized="2022:01:01 00:00:00", size=(64, 48))
    assert taken(plain)[0] == "exif_digitized"  # nothing else to find
    path = tmp_path / "both.jpg"
    exif = photos.build_exif(taken=None, offset=None, digitized="2022:01:01 00:00:00")
    xmp = dated.xmp_packet(exif_DateTimeOriginal="2021-05-06T07:08:09+09:00")
    photos.picture((64, 48)).save(path, "JPEG", exif=exif, xmp=xmp)
    assert taken(path) == ("xmp_original", datetime(2021, 5, 6, 7, 8, 9), 540)


def test_a_plain_jpeg_and_an_iphone_mov_keep_their_fast_dates(tmp_path) -> None:
    assert taken(photos.jpeg(tmp_path, size=(64, 48)))[0] == "exif_original"
    assert taken(videos.iphone_mov(tmp_path, codec="libx264"))[0] == "quicktime_local"
    assert taken(videos.h264_mp4(tmp_path))[0] == "quicktime_utc"  # exiftool finds no better


def test_nothing_hidden_leaves_the_file_name_and_mtime(tmp_path) -> None:
    named = photos.png(tmp_path / "Screenshot_2023-07-14-10-15-30.png", taken=None, size=(8, 8))
    assert taken(named)[0] == "filename"
    assert taken(photos.png(tmp_path / "plain.png", taken=None, size=(8, 8)))[0] == "mtime"


# ── exiftool's tags as it prints them ─────────────────────────────────────────
def test_avchd_and_maker_note_tags_from_exiftool_output() -> None:
    avchd = {"H264:DateTimeOriginal": "2011:03:20 10:00:00+01:00"}
    assert hidden_capture_time(avchd) == CaptureTime(datetime(2011, 3, 20, 10), 60, "avchd")
    sony = {
        "MakerNotes:Sony:SonyDateTime": "2019:01:02 03:04:05",
        "MakerNotes:Nikon:PowerUpTime": "2019:01:01 00:00:00",
        "EXIF:ExifIFD:OffsetTimeOriginal": "-03:00",
    }
    assert hidden_capture_time(sony) == CaptureTime(
        datetime(2019, 1, 2, 3, 4, 5), -180, "makernote"
    )
    unset = {"MakerNotes:Pentax:Date": "0000:00:00", "MakerNotes:Pentax:Time": "00:00:00"}
    assert hidden_capture_time(unset) is None
    # XMP beats a maker note, which beats QuickTime's keys
    mixed = {
        "QuickTime:Keys:DateTimeOriginal": "2010:01:01 00:00:00+00:00",
        "MakerNotes:Panasonic:TimeStamp": "2011:01:01 00:00:00",
        "XMP:XMP-photoshop:DateCreated": "2012:01:01 00:00:00+02:00",
    }
    assert hidden_capture_time(mixed) == CaptureTime(datetime(2012, 1, 1), 120, "xmp_date_created")
    assert SOURCES.index("xmp_date_created") < SOURCES.index("makernote")


# ── the pool ──────────────────────────────────────────────────────────────────
def test_a_request_that_hangs_times_out_and_the_next_gets_a_fresh_process(tmp_path, pool) -> None:
    path = dated.jpeg_with_xmp_date(tmp_path)
    assert pool.read_tags(str(path), REQUEST)
    [stuck] = pool.pids
    # A stopped exiftool answers nothing, like one stuck on a file (exiftool refuses the
    # usual stand-ins for a hanging read, FIFOs and devices, before opening them)
    os.kill(stuck, signal.SIGSTOP)
    with pytest.raises(ExiftoolTimeout):
        pool.read_tags(str(path), REQUEST, time_limit=0.5)
    assert pool.pids == []  # killed
    found = pool.read_tags(str(path), REQUEST)
    assert found is not None
    assert found["XMP:XMP-exif:DateTimeOriginal"] == "2021:05:06 07:08:09.250+09:00"
    assert pool.started == 2


def test_a_killed_process_is_replaced(tmp_path, pool) -> None:
    path = dated.png_with_xmp_date(tmp_path)
    assert pool.read_tags(str(path), REQUEST)
    [first] = pool.pids
    os.kill(first, signal.SIGKILL)
    assert pool.read_tags(str(path), REQUEST)  # a fresh one answers
    assert first not in pool.pids
    assert pool.started == 2


def test_threads_each_get_an_answer_for_their_own_file(tmp_path, pool) -> None:
    files = {
        dated.jpeg_with_xmp_date(
            tmp_path / f"{n}.jpg", seed=n, exif_DateTimeOriginal=f"2021-05-{n:02d}T07:08:09"
        ): f"2021:05:{n:02d} 07:08:09"
        for n in range(1, 13)
    }

    def read(path):
        return pool.read_tags(str(path), REQUEST)["XMP:XMP-exif:DateTimeOriginal"]

    asked = list(files) * 3
    with ThreadPoolExecutor(4) as threads:
        answers = list(threads.map(read, asked))
    assert answers == [files[path] for path in asked]
    assert 1 <= pool.started <= 4


def test_an_unreadable_file_has_no_tags(tmp_path, pool) -> None:
    assert pool.read_tags(str(tmp_path / "gone.jpg"), REQUEST) == {}
    assert pool.read_tags("-weird name.jpg", REQUEST) == {}  # a name, not an option


@pytest.mark.parametrize("installed", ["missing", "broken"])
def test_without_exiftool_the_fast_reader_works_and_one_warning_says_why(
    tmp_path, monkeypatch, caplog, installed
) -> None:
    executable = tmp_path / "exiftool"
    if installed == "broken":  # there, but exits at once
        executable.write_text("#!/bin/sh\nexit 3\n")
        executable.chmod(0o755)
    missing = ExiftoolPool(str(executable))
    monkeypatch.setitem(exiftool._shared, os.getpid(), missing)
    hidden = dated.jpeg_with_xmp_date(tmp_path)
    with caplog.at_level(logging.WARNING, logger="photo_pipeline.media.exiftool"):
        assert taken(hidden)[0] == "mtime"
        assert taken(dated.png_with_xmp_date(tmp_path))[0] == "mtime"
        assert taken(photos.jpeg(tmp_path, size=(64, 48)))[0] == "exif_original"
    warnings = [r for r in caplog.records if r.name == "photo_pipeline.media.exiftool"]
    assert len(warnings) == 1
    assert "libimage-exiftool-perl" in warnings[0].getMessage()
    assert missing.pids == []


def test_a_scan_dated_only_by_iptc_keeps_that_day(tmp_path) -> None:
    """IPTC-IIM DateCreated alone (archives and scans, exiftool's IPTC.jpg sample): the
    day it names at midnight, not the file's mtime (it was filed as undated)."""
    path = dated.write_tags(
        photos.jpeg(tmp_path / "scan.jpg", size=(32, 24), taken=None),
        "-IPTC:DateCreated=2004:02:26",
    )
    assert taken(path) == ("iptc_date_created", datetime(2004, 2, 26), None)


def test_iptc_date_and_time_beat_a_date_alone() -> None:
    """Photo Mechanic writes photoshop:DateCreated without its time and keeps the time
    in IPTC: the value with a time of day wins, whichever field holds it."""
    photo_mechanic = {
        "IPTC:DateCreated": "2006:10:29",
        "IPTC:TimeCreated": "06:27:51-05:00",
        "XMP:XMP-photoshop:DateCreated": "2006:10:29",
        "Composite:DateTimeCreated": "2006:10:29 06:27:51-05:00",
    }
    assert hidden_capture_time(photo_mechanic) == CaptureTime(
        datetime(2006, 10, 29, 6, 27, 51), -300, "iptc_date_created"
    )
    day_only = {"XMP:XMP-photoshop:DateCreated": "2006-10-29"}
    assert hidden_capture_time(day_only) == CaptureTime(
        datetime(2006, 10, 29), None, "xmp_date_created"
    )
    assert hidden_capture_time({"IPTC:DateCreated": "0000:00:00"}) is None
