"""The pure arithmetic of a clock correction (pipeline.timeshift.arithmetic) and its
window: no database, no job."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from photo_pipeline.media.places import EXIF_OFFSET, GPS_TIMEZONE
from photo_pipeline.pipeline.timeshift import (
    InvalidShift,
    Window,
    format_shift,
    parse_shift,
    shifted,
)


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("+2h15m", 8100),
        ("2h15m", 8100),
        ("-1d", -86400),
        ("+30s", 30),
        ("-1d2h3m4s", -(86400 + 7200 + 180 + 4)),
        (" +1H ", 3600),
    ],
)
def test_shift_syntax(text, seconds):
    shift = parse_shift(text)
    assert shift == timedelta(seconds=seconds)
    assert parse_shift(format_shift(shift)) == shift


@pytest.mark.parametrize("text", ["", "+", "2x", "+0h", "1h-2m", "+99999d", "1.5h", "h2"])
def test_bad_shifts_are_refused_with_a_clear_code(text):
    with pytest.raises(InvalidShift) as error:
        parse_shift(text)
    assert error.value.code == "invalid_shift"


def test_window_dates_are_whole_days_and_bad_ones_refused():
    window = Window.parse("2024-07-01", "2024-07-02")
    assert (window.since, window.before) == ("2024-07-01T00:00:00", "2024-07-03T00:00:00")
    assert Window.parse(None, "2024-07-02T10:00:00").before == "2024-07-02T10:00:01"
    for since, until in (("July", None), ("2024-07-03", "2024-07-01")):
        with pytest.raises(InvalidShift):
            Window.parse(since, until)


def test_a_shift_across_a_dst_change_takes_the_zones_new_offset():
    # Paris, 2024-03-31 01:30 CET (+60); two hours later the clocks say CEST (+120).
    before = {
        "taken_local": "2024-03-31T01:30:00",
        "taken_offset_minutes": 60,
        "tz_name": "Europe/Paris",
        "tz_source": GPS_TIMEZONE,
    }
    after = shifted(before, timedelta(hours=2))
    assert after.taken_local == "2024-03-31T03:30:00"
    assert after.taken_offset_minutes == 120
    assert after.taken_utc == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)
    assert after.tz_name == "Europe/Paris"


def test_a_cameras_own_offset_stays_and_stops_naming_a_zone_it_no_longer_fits():
    before = {
        "taken_local": "2024-03-31T01:30:00",
        "taken_offset_minutes": 60,
        "tz_name": "Europe/Paris",
        "tz_source": EXIF_OFFSET,
    }
    after = shifted(before, timedelta(hours=2))
    assert after.taken_offset_minutes == 60  # as the camera wrote it
    assert after.taken_utc == datetime(2024, 3, 31, 2, 30, tzinfo=UTC)
    assert after.tz_name != "Europe/Paris"  # Paris is at +120 by then


def test_a_floating_time_moves_its_wall_clock_only():
    before = {
        "taken_local": "2024-07-01T12:00:00",
        "taken_offset_minutes": None,
        "tz_name": None,
        "tz_source": None,
    }
    after = shifted(before, timedelta(minutes=-90))
    assert (after.taken_local, after.taken_utc, after.tz_name) == (
        "2024-07-01T10:30:00",
        None,
        None,
    )


def test_a_shift_past_year_9999_is_an_overflow():
    before = {
        "taken_local": "9999-12-31T23:00:00",
        "taken_offset_minutes": None,
        "tz_name": None,
        "tz_source": None,
    }
    with pytest.raises(OverflowError):
        shifted(before, timedelta(days=1))
