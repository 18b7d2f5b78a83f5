"""The pure arithmetic of a camera clock correction: parse and format a shift (or the
date a ``--set`` gives), and what an asset's capture columns become when its wall clock
moves (zones and DST included). No database, no job: unit-tested on its own."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import RowMapping

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.media.places import (
    EXIF_OFFSET,
    GPS_TIMEZONE,
    fixed_offset_name,
    offset_at,
    sort_instant,
)

# Twenty-odd years covers a camera whose clock reset to its factory date.
MAX_SHIFT = timedelta(days=36_525)
# ASCII digits, at most 12 each (anything longer is past MAX_SHIFT anyway).
_SHIFT = re.compile(
    r"^([+-]?)(?:([0-9]{1,12})d)?(?:([0-9]{1,12})h)?(?:([0-9]{1,12})m)?(?:([0-9]{1,12})s)?$"
)


class InvalidShift(PhotoPipelineError):
    """A bad ``--by``, ``--since`` or ``--until`` value."""

    code = "invalid_shift"
    status = 422


def parse_shift(text: str) -> timedelta:
    """``+2h15m``, ``-1d``, ``-30s``, ``+1d2h3m4s`` -> a non-zero timedelta."""
    match = _SHIFT.match(text.strip().replace(" ", "").lower())
    if match is None or not any(match.group(i) for i in range(2, 6)):
        raise InvalidShift(
            detail=f"--by must look like +2h15m, -1d or +30s (units d, h, m, s), got {text!r}"
        )
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in range(2, 6))
    try:
        shift = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise InvalidShift(
            detail=f"--by must be at most {MAX_SHIFT.days} days, got {text!r}"
        ) from None
    if match.group(1) == "-":
        shift = -shift
    if not shift:
        raise InvalidShift(detail=f"--by must not be zero, got {text!r}")
    if abs(shift) > MAX_SHIFT:
        raise InvalidShift(detail=f"--by must be at most {MAX_SHIFT.days} days, got {text!r}")
    return shift


# What ``--set`` takes: a date, or a date and a time (to the minute or second), local.
_SET = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}(?:[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2})?)?$")
# Photography began in 1826 (media.capture_time); 9998 leaves room for any zone.
_SET_YEARS = (1826, 9998)


def parse_set(text: str) -> datetime:
    """``2019-06-14T10:00``, ``2019-06-14 10:00:30`` or ``2019-06-14`` (midnight): the
    local wall-clock time ``--set`` gives the assets, naive. An offset is refused: the
    zone stays the asset's own (a GPS zone gives the offset valid at the new time)."""
    stripped = text.strip()
    if not _SET.match(stripped):
        raise InvalidShift(
            detail="--set must be a local date and time like 2019-06-14T10:00 (or a date, "
            f"2019-06-14), without an offset, got {text!r}"
        )
    try:
        moment = datetime.fromisoformat(stripped)
    except ValueError:
        raise InvalidShift(detail=f"--set: {text!r} is not a date and time") from None
    if not _SET_YEARS[0] <= moment.year <= _SET_YEARS[1]:
        raise InvalidShift(
            detail=f"--set must be between the years {_SET_YEARS[0]} and {_SET_YEARS[1]}, "
            f"got {text!r}"
        )
    return moment


def format_shift(shift: timedelta) -> str:
    """The inverse of ``parse_shift``: 8100 s -> ``+2h15m``."""
    total = int(shift.total_seconds())
    sign, total = ("-" if total < 0 else "+"), abs(total)
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if total >= size:
            parts.append(f"{total // size}{unit}")
            total %= size
    return sign + "".join(parts)


@dataclass(frozen=True)
class CaptureValues:
    """The capture-time columns a shift changes."""

    taken_local: str
    taken_offset_minutes: int | None
    taken_utc: datetime | None
    taken_order: datetime | None
    tz_name: str | None


def set_clock(values: RowMapping | Mapping[str, Any], moment: datetime) -> CaptureValues:
    """The capture columns ``values`` after its wall clock is set to ``moment``: the
    shift from its date to that one, with the zone rules of :func:`shifted`."""
    return shifted(values, moment - datetime.fromisoformat(values["taken_local"]))


def shifted(values: RowMapping | Mapping[str, Any], shift: timedelta) -> CaptureValues:
    """The capture columns ``values`` (an asset row's mapping) after moving its wall
    clock by ``shift``. A zone from GPS gives the offset valid at the new time (the
    shift may cross a DST change); an EXIF offset stays as the camera wrote it (and
    keeps naming its zone only while the zone agrees). Raises OverflowError past year
    9999."""
    local = datetime.fromisoformat(values["taken_local"]) + shift
    offset, zone = values["taken_offset_minutes"], values["tz_name"]
    if values["tz_source"] == GPS_TIMEZONE and zone:
        offset = offset_at(zone, local)
    elif (
        values["tz_source"] == EXIF_OFFSET
        and zone
        and offset is not None
        and zone != fixed_offset_name(offset)
        and offset_at(zone, local) != offset
    ):
        zone = fixed_offset_name(offset)
    utc = None
    if offset is not None:
        utc = (local - timedelta(minutes=offset)).replace(tzinfo=UTC)
    return CaptureValues(local.isoformat(), offset, utc, sort_instant(local, utc), zone)
