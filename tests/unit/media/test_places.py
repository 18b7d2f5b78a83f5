"""Time zones and places of captures (media.places), offline."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from photo_pipeline.media.capture_time import CaptureTime
from photo_pipeline.media.places import (
    EXIF_OFFSET,
    FLOATING,
    GPS_TIMEZONE,
    UTC_CLOCK,
    Place,
    locate,
    locate_many,
    place_at,
    valid_position,
    zone_at,
)

PARIS = (48.8566, 2.3522)
NEW_YORK = (40.7128, -74.0060)
DELHI = (28.6139, 77.2090)
KATHMANDU = (27.7172, 85.3240)
ADELAIDE = (-34.9285, 138.6007)
TOKYO_STATION = (35.6812, 139.7671)
ST_JOHNS = (47.5615, -52.7126)
MID_ATLANTIC = (30.0, -40.0)
MID_PACIFIC = (0.5, -150.0)


def camera_clock(text: str) -> CaptureTime:
    """A wall-clock EXIF time without an offset, as most cameras write it."""
    return CaptureTime(datetime.fromisoformat(text), None, "exif_original")


@pytest.mark.parametrize(
    ("position", "local", "zone", "minutes"),
    [
        (PARIS, "2024-01-15T12:00:00", "Europe/Paris", 60),
        (PARIS, "2024-07-15T12:00:00", "Europe/Paris", 120),
        # The DST switch day: 02:00 -> 03:00 on 31 March 2024
        (PARIS, "2024-03-31T01:30:00", "Europe/Paris", 60),
        (PARIS, "2024-03-31T03:30:00", "Europe/Paris", 120),
        (NEW_YORK, "2024-03-10T01:59:00", "America/New_York", -300),
        (NEW_YORK, "2024-03-10T03:00:00", "America/New_York", -240),
        (DELHI, "2024-07-15T12:00:00", "Asia/Kolkata", 330),
        (KATHMANDU, "2024-07-15T12:00:00", "Asia/Kathmandu", 345),
        (ADELAIDE, "2024-01-15T12:00:00", "Australia/Adelaide", 630),  # southern summer
        (ADELAIDE, "2024-07-15T12:00:00", "Australia/Adelaide", 570),
        (TOKYO_STATION, "2024-07-15T12:00:00", "Asia/Tokyo", 540),
        (ST_JOHNS, "2024-01-15T12:00:00", "America/St_Johns", -210),
    ],
)
def test_gps_position_gives_the_zone_and_its_offset_at_that_date(position, local, zone, minutes):
    found = locate(camera_clock(local), *position).zone
    assert (found.tz_name, found.tz_source, found.offset_minutes) == (zone, GPS_TIMEZONE, minutes)
    assert found.local == datetime.fromisoformat(local)
    assert found.utc == datetime.fromisoformat(local).replace(tzinfo=UTC) - timedelta(
        minutes=minutes
    )
    assert found.order == found.utc


def test_exif_offset_wins_over_the_gps_zone():
    taken = CaptureTime(datetime(2024, 7, 15, 12, 0), 540, "exif_original")  # +09:00
    zone = locate(taken, *PARIS).zone  # Paris is +02:00 in July
    assert (zone.tz_source, zone.offset_minutes, zone.tz_name) == (EXIF_OFFSET, 540, "UTC+09:00")
    assert zone.utc == datetime(2024, 7, 15, 3, 0, tzinfo=UTC)


def test_exif_offset_that_agrees_with_the_gps_zone_names_the_zone():
    taken = CaptureTime(datetime(2024, 7, 15, 12, 0), 330, "exif_original")
    zone = locate(taken, *DELHI).zone
    assert (zone.tz_source, zone.tz_name, zone.offset_minutes) == (
        EXIF_OFFSET,
        "Asia/Kolkata",
        330,
    )


def test_exif_offset_without_gps_keeps_a_fixed_offset_name():
    zone = locate(CaptureTime(datetime(2024, 7, 15, 12, 0), -300, "exif_original"), None, None)
    assert (zone.zone.tz_source, zone.zone.tz_name, zone.place) == (EXIF_OFFSET, "UTC-05:00", None)


def test_no_offset_and_no_position_is_floating():
    found = locate(camera_clock("2024-07-15T12:00:00"), None, None)
    zone = found.zone
    assert (zone.tz_source, zone.tz_name, zone.offset_minutes, zone.utc) == (
        FLOATING,
        None,
        None,
        None,
    )
    assert found.place is None
    # floating photos sort by their wall clock read as UTC
    assert zone.order == datetime(2024, 7, 15, 12, 0, tzinfo=UTC)


def test_gps_clock_time_becomes_local_time_at_the_position():
    taken = CaptureTime(datetime(2024, 7, 15, 6, 0), 0, "gps")  # a UTC instant
    zone = locate(taken, *KATHMANDU).zone
    assert zone.local == datetime(2024, 7, 15, 11, 45)
    assert (zone.offset_minutes, zone.tz_source) == (345, GPS_TIMEZONE)
    assert zone.utc == datetime(2024, 7, 15, 6, 0, tzinfo=UTC)
    no_position = locate(taken, None, None).zone
    assert (no_position.tz_source, no_position.offset_minutes) == (UTC_CLOCK, 0)


@pytest.mark.parametrize(
    ("position", "code", "country", "city"),
    [
        (PARIS, "FR", "France", "Paris"),
        (NEW_YORK, "US", "United States", "New York City"),
        (KATHMANDU, "NP", "Nepal", "Kathmandu"),
        ((-33.8688, 151.2093), "AU", "Australia", "Sydney"),
        ((51.5074, -0.1278), "GB", "United Kingdom", "London"),
        ((48.5800, 7.7500), "FR", "France", "Strasbourg"),  # the Rhine: Kehl is in DE
        ((-22.9068, -43.1729), "BR", "Brazil", "Rio de Janeiro"),
    ],
)
def test_known_coordinates_resolve_to_country_and_city(position, code, country, city):
    place = place_at(*position)
    assert place is not None
    assert (place.country_code, place.country, place.city) == (code, country, city)
    assert place.region


def test_far_from_any_town_the_country_comes_from_the_zone():
    # Ténéré desert, Niger: the nearest GeoNames town is across the border in Libya
    assert place_at(23.0, 12.0) == Place("NE", "Niger", None, None)


@pytest.mark.parametrize(
    ("latitude", "longitude"),
    [
        (0.0, 0.0),
        (91.0, 10.0),
        (-90.5, 0.0),
        (10.0, 180.5),
        (float("nan"), 1.0),
        (1.0, float("inf")),
    ],
)
def test_null_island_and_impossible_positions_are_no_position(latitude, longitude):
    assert valid_position(latitude, longitude) is None
    assert zone_at(latitude, longitude) is None
    assert place_at(latitude, longitude) is None
    found = locate(camera_clock("2024-07-15T12:00:00"), latitude, longitude)
    assert (found.zone.tz_source, found.place) == (FLOATING, None)


@pytest.mark.parametrize(
    ("position", "zone", "minutes"),
    [(MID_ATLANTIC, "Etc/GMT+3", -180), (MID_PACIFIC, "Etc/GMT+10", -600)],
)
def test_mid_ocean_gets_a_nautical_zone_but_no_place(position, zone, minutes):
    found = locate(camera_clock("2024-07-15T12:00:00"), *position)
    assert (found.zone.tz_name, found.zone.offset_minutes) == (zone, minutes)
    assert found.place is None


def test_a_batch_gives_the_same_answers_as_one_by_one():
    captures = [
        (camera_clock("2024-07-15T12:00:00"), lat, lon)
        for lat, lon in (PARIS, (0.0, 0.0), MID_ATLANTIC, KATHMANDU, (None, None))
    ]
    assert locate_many(captures) == [locate(*capture) for capture in captures]
