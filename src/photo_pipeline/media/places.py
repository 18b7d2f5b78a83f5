"""Where and in which time zone a photo was taken, offline. Pure functions, no database.

* Time zone: EXIF ``OffsetTime*`` wins; else the IANA zone at the GPS position (``tzfpy``,
  which ships the timezone-boundary-builder polygons, oceans included as ``Etc/GMT±N``)
  gives the UTC offset valid at the capture's local date (``zoneinfo``, DST included);
  else the time is "floating" (wall clock, instant unknown).
* Place: the nearest GeoNames populated place of 1,000+ people (``media.place_index``,
  the compact gazetteer shipped with the package) within ``CITY_MAX_KM`` is the
  district; the city is the place a person would name there, worked out when the
  gazetteer was built (Tokyo for Kabukichō, Berlin for Mitte; a village far from any
  city is its own city, and then there is no district). The country comes from the zone
  where the zone belongs to one country (tz ``zone.tab``, which follows borders), else
  from that place. Open sea (a nautical zone) has no place. Country names are the IANA
  tz database's (``iso3166.tab`` in the ``tzdata`` package).
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzfpy

from photo_pipeline.media.capture_time import (
    MACHINE_CLOCK_SOURCES,
    UTC_CLOCK_SOURCES,
    CaptureTime,
)

if TYPE_CHECKING:
    from photo_pipeline.media.place_index import Gazetteer

# Where the time zone of a capture came from.
EXIF_OFFSET = "exif_offset"  # the camera wrote its UTC offset next to the time
GPS_TIMEZONE = "gps_timezone"  # the zone at the photo's GPS position
UTC_CLOCK = "utc"  # the time is a GPS-clock UTC instant and no position gives a zone
FLOATING = "floating"  # wall-clock time only: the instant is unknown
TZ_SOURCES = (EXIF_OFFSET, GPS_TIMEZONE, UTC_CLOCK, FLOATING)

# GeoNames places are points: past this distance the nearest one is no longer "the
# city the photo was taken in" (open country, a ship off the coast).
CITY_MAX_KM = 50.0
# Without a one-country zone to say so, the nearest place's country is trusted this far.
COUNTRY_MAX_KM = 150.0
# Some phones write 0°, 0° when they have no fix: a position in the Gulf of Guinea.
NULL_ISLAND_DEGREES = 1e-6
_EARTH_RADIUS_KM = 6371.0088
# The tz database calls the United Kingdom "Britain (UK)": fine for a zone list, odd as
# a folder name.
_COUNTRY_NAME_OVERRIDES = {"GB": "United Kingdom"}


@dataclass(frozen=True)
class CaptureZone:
    """A capture's wall-clock time with its zone: ``offset_minutes`` and ``tz_name``
    are None when floating. ``tz_name`` is an IANA name, or ``UTC±HH:MM`` for an EXIF
    offset that no known zone explains."""

    local: datetime
    offset_minutes: int | None
    tz_name: str | None
    tz_source: str

    @property
    def utc(self) -> datetime | None:
        """The aware UTC instant, or None for floating time."""
        return CaptureTime(self.local, self.offset_minutes, "").utc

    @property
    def order(self) -> datetime:
        """The instant photos are ordered by: UTC when known, else the wall clock read
        as if it were UTC (floating photos sort by their local time)."""
        return sort_instant(self.local, self.utc)


@dataclass(frozen=True)
class Place:
    """Country (ISO 3166 alpha-2 code and English name), first-level region, city (the
    place a person would name) and district (the nearest place, when it is part of the
    city rather than the city itself); any of them may be None."""

    country_code: str | None
    country: str | None
    region: str | None
    city: str | None
    district: str | None = None


@dataclass(frozen=True)
class ZoneAndPlace:
    """What ``locate`` finds for one photo."""

    zone: CaptureZone
    place: Place | None


# ── positions ─────────────────────────────────────────────────────────────────
def valid_position(latitude: float | None, longitude: float | None) -> tuple[float, float] | None:
    """``(lat, lon)`` when it is a real position: finite, in range, not null island."""
    if latitude is None or longitude is None:
        return None
    if not (math.isfinite(latitude) and math.isfinite(longitude)):
        return None
    if abs(latitude) > 90 or abs(longitude) > 180:
        return None
    if abs(latitude) < NULL_ISLAND_DEGREES and abs(longitude) < NULL_ISLAND_DEGREES:
        return None
    return latitude, longitude


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle (haversine) distance."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    h = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * _EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(h)))


# ── time zones ────────────────────────────────────────────────────────────────
def zone_at(latitude: float, longitude: float) -> str | None:
    """The IANA zone at a position (``Etc/GMT±N`` at sea); None for an invalid position
    or a zone this machine's tz data does not know."""
    position = valid_position(latitude, longitude)
    if position is None:
        return None
    name = tzfpy.get_tz(position[1], position[0])
    return name if name and _zone(name) is not None else None


def is_nautical(zone_name: str | None) -> bool:
    """True for the open-sea zones (``Etc/GMT+5``…): no country governs there."""
    return bool(zone_name) and zone_name.startswith("Etc/")  # type: ignore[union-attr]


def offset_at(zone_name: str, local: datetime) -> int | None:
    """The UTC offset in minutes of ``zone_name`` at naive wall-clock ``local``.

    A repeated hour (DST ends) takes its first occurrence; a skipped one (DST starts)
    the offset before the change, as ``zoneinfo`` does for ``fold=0``.
    """
    zone = _zone(zone_name)
    if zone is None:
        return None
    offset = local.replace(tzinfo=zone, fold=0).utcoffset()
    return None if offset is None else int(offset // timedelta(minutes=1))


def fixed_offset_name(minutes: int) -> str:
    """``UTC+05:30`` for 330."""
    return timezone(timedelta(minutes=minutes)).tzname(None) if minutes else "UTC"


def resolve_zone(taken: CaptureTime, zone_name: str | None) -> CaptureZone:
    """Apply the zone rules to a capture time: EXIF offset, else the GPS zone (or,
    for an instant — a GPS-clock UTC time, a file's mtime — its local time there), else
    floating (a file's mtime on this machine's wall clock)."""
    instant = taken.source in UTC_CLOCK_SOURCES or taken.source in MACHINE_CLOCK_SOURCES
    if taken.offset_minutes is not None and not instant:
        agrees = zone_name is not None and offset_at(zone_name, taken.local) == (
            taken.offset_minutes
        )
        name = zone_name if agrees else fixed_offset_name(taken.offset_minutes)
        return CaptureZone(taken.local, taken.offset_minutes, name, EXIF_OFFSET)
    zone = _zone(zone_name) if zone_name else None
    if instant and taken.utc is not None:
        if zone is not None:
            there = taken.utc.astimezone(zone)
            minutes = int(there.utcoffset() // timedelta(minutes=1))  # type: ignore[operator]
            return CaptureZone(there.replace(tzinfo=None), minutes, zone_name, GPS_TIMEZONE)
        if taken.source in UTC_CLOCK_SOURCES:
            return CaptureZone(taken.local, taken.offset_minutes, "UTC", UTC_CLOCK)
        # an mtime without a position: this machine's offset is not the capture's
        return CaptureZone(taken.local, None, None, FLOATING)
    if zone is not None and zone_name is not None:
        return CaptureZone(taken.local, offset_at(zone_name, taken.local), zone_name, GPS_TIMEZONE)
    return CaptureZone(taken.local, None, None, FLOATING)


def sort_instant(local: datetime, utc: datetime | None) -> datetime:
    """The ordering instant: ``utc`` when known, else ``local`` read as UTC."""
    return utc if utc is not None else local.replace(tzinfo=UTC)


@cache
def _zone(name: str) -> ZoneInfo | None:
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return None


# ── places ────────────────────────────────────────────────────────────────────
def places_at(
    positions: Sequence[tuple[float, float] | None], zones: Sequence[str | None]
) -> list[Place | None]:
    """Reverse-geocode a batch (one k-d tree query for all); ``zones[i]`` is the zone
    at ``positions[i]`` (``zone_at``). None where there is no position or open sea."""
    wanted = [
        i
        for i, (position, zone) in enumerate(zip(positions, zones, strict=True))
        if position is not None and zone is not None and not is_nautical(zone)
    ]
    found: list[Place | None] = [None] * len(positions)
    if not wanted:
        return found
    gazetteer = _gazetteer()
    nearest = gazetteer.nearest([positions[i] for i in wanted])  # type: ignore[misc]
    for i, hit in zip(wanted, nearest, strict=True):
        found[i] = _place(gazetteer, positions[i], zones[i], int(hit))  # type: ignore[arg-type]
    return found


def place_at(latitude: float, longitude: float) -> Place | None:
    """The place at one position (see ``places_at``)."""
    position = valid_position(latitude, longitude)
    if position is None:
        return None
    return places_at([position], [zone_at(*position)])[0]


def locate(taken: CaptureTime, latitude: float | None, longitude: float | None) -> ZoneAndPlace:
    """Zone and place of one capture (``locate_many`` batches the place lookups)."""
    return locate_many([(taken, latitude, longitude)])[0]


def locate_many(
    captures: Sequence[tuple[CaptureTime, float | None, float | None]],
) -> list[ZoneAndPlace]:
    """Zone and place of each ``(capture time, latitude, longitude)``."""
    positions = [valid_position(lat, lon) for _, lat, lon in captures]
    zones = [zone_at(*p) if p is not None else None for p in positions]
    places = places_at(positions, zones)
    return [
        ZoneAndPlace(resolve_zone(taken, zone), place)
        for (taken, _, _), zone, place in zip(captures, zones, places, strict=True)
    ]


def _place(
    gazetteer: Gazetteer, position: tuple[float, float], zone_name: str, hit: int
) -> Place | None:
    distance = distance_km(*position, *gazetteer.position(hit))
    hit_country = gazetteer.country_code(hit)
    zone_country = _zone_countries().get(zone_name)
    # A place across a border from the zone's country is the wrong city (Kehl for a
    # photo in Strasbourg): keep the country, drop city, district and region.
    near = distance <= CITY_MAX_KM and zone_country in (None, hit_country)
    code = zone_country or (hit_country if distance <= COUNTRY_MAX_KM else None)
    if code is None:
        return None
    if not near:
        return Place(country_code=code, country=country_name(code), region=None, city=None)
    city = int(gazetteer.city[hit])
    city_name, district = gazetteer.name(city), gazetteer.name(hit)
    return Place(
        country_code=code,
        country=country_name(code),
        region=gazetteer.region_name(city),
        city=city_name,
        district=district if district != city_name else None,
    )


def country_name(code: str) -> str | None:
    """The English short name of an ISO 3166 alpha-2 code (tz database names)."""
    return _COUNTRY_NAME_OVERRIDES.get(code) or _country_names().get(code)


def _tz_table(name: str) -> list[list[str]]:
    text = resources.files("tzdata.zoneinfo").joinpath(name).read_text(encoding="utf-8")
    return [line.split("\t") for line in text.splitlines() if line and not line.startswith("#")]


@cache
def _country_names() -> dict[str, str]:
    return {row[0]: row[1] for row in _tz_table("iso3166.tab")}


@cache
def _zone_countries() -> dict[str, str]:
    """Zone name -> the one country it lies in (zone.tab: one zone, one country)."""
    return {row[2]: row[0] for row in _tz_table("zone.tab")}


_loading = threading.Lock()
_warming: list[threading.Thread] = []


def _gazetteer() -> Gazetteer:
    with _loading:  # one load per process, shared by its threads
        return _load_place_data()


@cache
def _load_place_data() -> Gazetteer:
    # Imported late: only processes that meet a position pay for the data (about 10 MB
    # for the gazetteer, 35 MB for tzfpy's polygons, unpacked at its first lookup).
    from photo_pipeline.media import place_index

    gazetteer = place_index.load()
    tzfpy.get_tz(0.0, 0.0)
    _zone_countries()
    _country_names()
    return gazetteer


def warm_up() -> None:
    """Load the place data now rather than at the first lookup."""
    _gazetteer()


def warm_up_in_background() -> None:
    """Start loading the place data in a thread (once per process), so that it
    overlaps other work instead of stalling the first lookup."""
    with _loading:
        if _warming or _load_place_data.cache_info().currsize:
            return
        thread = threading.Thread(target=warm_up, name="places-warm-up", daemon=True)
        _warming.append(thread)
    thread.start()
