"""When schedules tick (jobs.schedules.timing): cron in the schedule's zone across
both DST transitions, intervals from the schedule's creation, and refused input."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import pytest

from photo_pipeline.jobs.errors import InvalidArgument
from photo_pipeline.jobs.schedules.timing import (
    Timing,
    check_cron,
    format_interval,
    parse_interval,
    zone,
)

PARIS = ZoneInfo("Europe/Paris")


def cron(expression: str, tz: ZoneInfo = PARIS) -> Timing:
    return Timing(check_cron(expression), None, tz, datetime(2026, 1, 1, tzinfo=UTC))


def ticks(timing: Timing, start: datetime, n: int) -> list[str]:
    found, moment = [], start
    for _ in range(n):
        moment = timing.next_after(moment)
        found.append(moment.astimezone(timing.zone).isoformat())
    return found


def test_spring_forward_a_skipped_time_ticks_one_gap_later_that_day_only():
    # 2026-03-29: Paris jumps from 02:00 CET to 03:00 CEST; 02:30 does not exist.
    start = datetime(2026, 3, 28, 12, tzinfo=PARIS)
    assert ticks(cron("30 2 * * *"), start, 3) == [
        "2026-03-29T03:30:00+02:00",
        "2026-03-30T02:30:00+02:00",
        "2026-03-31T02:30:00+02:00",
    ]
    # A time that exists is not moved, and the day has its one tick.
    assert ticks(cron("0 3 * * *"), start, 2) == [
        "2026-03-29T03:00:00+02:00",
        "2026-03-30T03:00:00+02:00",
    ]


def test_fall_back_a_repeated_time_ticks_once():
    # 2026-10-25: Paris goes back from 03:00 CEST to 02:00 CET; 02:30 happens twice.
    start = datetime(2026, 10, 24, 12, tzinfo=PARIS)
    assert ticks(cron("30 2 * * *"), start, 3) == [
        "2026-10-25T02:30:00+02:00",
        "2026-10-26T02:30:00+01:00",
        "2026-10-27T02:30:00+01:00",
    ]


def test_fall_back_the_latest_tick_seen_from_the_repeated_hour_is_the_one_that_ran():
    nightly = cron("30 2 * * *")
    first = datetime(2026, 10, 25, 0, 30, tzinfo=UTC)  # 02:30 CEST
    # 02:45 CET, the second pass through 02:xx: the tick of the night is still the first.
    assert nightly.latest_at_or_before(datetime(2026, 10, 25, 1, 45, tzinfo=UTC)) == first
    assert nightly.next_after(first) == datetime(2026, 10, 26, 1, 30, tzinfo=UTC)


def test_spring_forward_the_latest_tick_is_never_in_the_future():
    nightly = cron("30 2 * * *")
    # 03:10 CEST on the jump night: 02:30 ticks at 03:30, not yet; the latest is yesterday's.
    moment = datetime(2026, 3, 29, 1, 10, tzinfo=UTC)
    assert nightly.latest_at_or_before(moment) == datetime(2026, 3, 28, 1, 30, tzinfo=UTC)


def test_cron_is_read_in_the_schedules_zone():
    at_three = cron("0 3 * * *", ZoneInfo("America/New_York"))
    noon = datetime(2026, 7, 1, 12, tzinfo=UTC)
    assert at_three.next_after(noon) == datetime(2026, 7, 2, 7, 0, tzinfo=UTC)  # EDT, UTC-4


def test_an_interval_counts_from_the_schedules_creation():
    made = datetime(2026, 5, 1, 10, 17, tzinfo=UTC)
    every = Timing(None, timedelta(hours=6), ZoneInfo("UTC"), made)
    assert every.latest_at_or_before(made + timedelta(hours=5)) is None
    assert every.next_after(made) == made + timedelta(hours=6)
    assert every.latest_at_or_before(made + timedelta(days=3, hours=1)) == made + timedelta(days=3)
    assert every.next_after(made + timedelta(hours=6)) == made + timedelta(hours=12)


@pytest.mark.parametrize(
    ("text", "seconds"), [("6h", 21600), ("30m", 1800), ("1d12h", 129600), ("2w", 1209600)]
)
def test_intervals_read_and_print_back(text, seconds):
    assert parse_interval(text) == timedelta(seconds=seconds)
    assert parse_interval(format_interval(timedelta(seconds=seconds))) == timedelta(seconds=seconds)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "6",
        "h",
        "6x",
        "-6h",
        "30s",
        "400d",
        "6h;rm",
        "9" * 30 + "h",
        "99999999w",
        "1" * 5000 + "s",
    ],
)
def test_bad_intervals_are_refused(text):
    with pytest.raises(InvalidArgument) as refused:
        parse_interval(text)
    assert refused.value.code == "invalid_interval"


@pytest.mark.parametrize(
    "expression",
    [
        "",
        "* * * *",
        "61 * * * *",
        "0 3 * * * *",
        "@reboot",
        "every night",
        "0 0 31 2 *",
        "R 3 * * *",
        "H/5 * * * *",
        "*/0 * * * *",
    ],
)
def test_bad_cron_expressions_are_refused(expression):
    with pytest.raises(InvalidArgument) as refused:
        cron(expression).next_after(datetime(2026, 1, 1, tzinfo=UTC))
    assert refused.value.code == "invalid_cron"


@pytest.mark.parametrize("name", ["", "Mars/Olympus", "America", "../etc/passwd", "/UTC", "a" * 80])
def test_unknown_time_zones_are_refused(name):
    with pytest.raises(InvalidArgument) as refused:
        zone(name)
    assert refused.value.code == "invalid_time_zone"
