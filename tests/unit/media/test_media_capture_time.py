"""Date parsing: file-name patterns, EXIF date strings, offsets, GPS stamps, CaptureTime.utc."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from photo_pipeline.media import CaptureTime, capture_time_from_filename
from photo_pipeline.media.capture_time import gps_datetime, parse_exif_datetime, parse_offset


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("IMG_20230714_101530.jpg", datetime(2023, 7, 14, 10, 15, 30)),
        ("VID_20230714_101530.mp4", datetime(2023, 7, 14, 10, 15, 30)),
        ("PXL_20230714_101530123.jpg", datetime(2023, 7, 14, 10, 15, 30, 123000)),
        ("PXL_20230714_101530123.MP.jpg", datetime(2023, 7, 14, 10, 15, 30, 123000)),
        ("2023-07-14 10.15.30.jpg", datetime(2023, 7, 14, 10, 15, 30)),
        ("20230714_101530.jpg", datetime(2023, 7, 14, 10, 15, 30)),
        ("20230714_101530(1).jpg", datetime(2023, 7, 14, 10, 15, 30)),
        ("IMG-20230714-WA0001.jpg", datetime(2023, 7, 14)),
        ("VID-20230714-WA0001.mp4", datetime(2023, 7, 14)),
        ("Screenshot_2023-07-14-10-15-30.png", datetime(2023, 7, 14, 10, 15, 30)),
        ("Screenshot_20230714-101530.png", datetime(2023, 7, 14, 10, 15, 30)),
        ("Screenshot 2023-07-14 at 10.15.30.png", datetime(2023, 7, 14, 10, 15, 30)),
        ("signal-2023-07-14-101530.jpg", datetime(2023, 7, 14, 10, 15, 30)),
        ("trip_2023-07-14.jpg", datetime(2023, 7, 14)),
        ("/photos/2019/IMG_20230714_101530.jpg", datetime(2023, 7, 14, 10, 15, 30)),
    ],
)
def test_file_name_patterns(name, expected) -> None:
    assert capture_time_from_filename(name) == expected


@pytest.mark.parametrize(
    "name",
    [
        "DSC_0001.JPG",
        "IMG_1234.HEIC",
        "photo.jpg",
        "IMG_20231345_101530.jpg",  # month 13
        "IMG_20230714_256199.jpg",  # hour 25
        "IMG_00000000_000000.jpg",
        "123456789012345.jpg",
        "20230714.jpg",  # a bare 8-digit number is too ambiguous without a separator
        "",
    ],
)
def test_file_names_without_a_date(name) -> None:
    assert capture_time_from_filename(name) is None


@pytest.mark.parametrize(
    ("text", "subsec", "expected"),
    [
        ("2023:07:14 10:15:30", None, (datetime(2023, 7, 14, 10, 15, 30), None)),
        ("2023:07:14 10:15:30", "123", (datetime(2023, 7, 14, 10, 15, 30, 123000), None)),
        ("2023:07:14 10:15:30", "05", (datetime(2023, 7, 14, 10, 15, 30, 50000), None)),
        ("2023:07:14 10:15:30\x00", "  ", (datetime(2023, 7, 14, 10, 15, 30), None)),
        ("2023-07-14T10:15:30.250", None, (datetime(2023, 7, 14, 10, 15, 30, 250000), None)),
        ("2023:07:14 10:15:30+02:00", None, (datetime(2023, 7, 14, 10, 15, 30), 120)),
        ("2023:07:14 10:15", None, (datetime(2023, 7, 14, 10, 15), None)),
    ],
)
def test_exif_datetime(text, subsec, expected) -> None:
    assert parse_exif_datetime(text, subsec) == expected


@pytest.mark.parametrize(
    "text",
    [
        "0000:00:00 00:00:00",
        "    :  :     :  :  ",
        "",
        "2023:13:01 10:00:00",
        "2023:02:29 10:00:00",
        "2023:07:14 10:60:00",
        "1601:01:01 00:00:00",
        "9999:12:31 23:59:59",  # a placeholder; in UTC it would leave what a datetime holds
        "9999:12:31 23:59:59-12:00",
        "2023:07:14",
        "garbage",
        None,
        b"2023:07:14 10:15:30",
        20230714,
    ],
)
def test_garbage_exif_datetime(text) -> None:
    assert parse_exif_datetime(text) is None


def test_sub_seconds_that_are_no_digits_are_left_out() -> None:
    # "²" is a digit to str.isdigit(), not to int()
    assert parse_exif_datetime("2023:07:14 10:15:30", "\u00b2") == (
        datetime(2023, 7, 14, 10, 15, 30),
        None,
    )


@pytest.mark.parametrize(
    ("text", "minutes"),
    [
        ("+02:00", 120),
        ("-05:30", -330),
        ("+0545", 345),
        ("Z", 0),
        ("+14:00", 840),
        ("+14:01", None),
        ("+02:60", None),
        ("  :  ", None),
        ("", None),
        (None, None),
    ],
)
def test_offsets(text, minutes) -> None:
    assert parse_offset(text) == minutes


def test_gps_datetime() -> None:
    assert gps_datetime("2023:07:14", (8.0, 15.0, 30.5)) == datetime(2023, 7, 14, 8, 15, 30, 500000)
    assert gps_datetime("2023:07:14", (24.0, 0.0, 0.0)) is None
    assert gps_datetime("0000:00:00", (8.0, 15.0, 30.0)) is None
    assert gps_datetime(None, (8.0, 15.0, 30.0)) is None
    assert gps_datetime("2023:07:14", None) is None
    assert gps_datetime("2023:07:14", (8.0, 15.0)) is None


def test_capture_time_utc() -> None:
    assert CaptureTime(datetime(2023, 7, 14, 10, 0), 120, "exif_original").utc == datetime(
        2023, 7, 14, 8, 0, tzinfo=UTC
    )
    assert CaptureTime(datetime(2023, 7, 14, 1, 0), -300, "exif_original").utc == datetime(
        2023, 7, 14, 6, 0, tzinfo=UTC
    )
    assert CaptureTime(datetime(2023, 7, 14, 10, 0), None, "filename").utc is None
    gps = CaptureTime(datetime(2023, 7, 14, 8, 0), 0, "gps")
    assert gps.utc == datetime(2023, 7, 14, 8, 0, tzinfo=UTC)
    assert gps.utc.tzinfo is UTC


def test_every_source_has_a_confidence_and_only_mtime_is_undated() -> None:
    from photo_pipeline.media.capture_time import (
        CONFIDENCES,
        SOURCES,
        UNDATED_SOURCES,
        confidence,
    )

    assert {confidence(source) for source in SOURCES} == set(CONFIDENCES)
    assert confidence("exif_original") == "camera"
    assert confidence("gps") == "inferred"
    assert confidence("filename") == "filename"
    assert {"mtime"} == UNDATED_SOURCES
