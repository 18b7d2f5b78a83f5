"""Parse ISO 6709 position strings, as videos store their GPS fix.

QuickTime's ``©xyz`` (FFmpeg's ``location``) and Apple's
``com.apple.quicktime.location.ISO6709`` hold e.g. ``+52.5200+013.4050+034.000/``:
signed latitude, signed longitude, optional signed altitude in metres, an optional
``CRS…`` name, and the ``/`` terminator. Latitude and longitude may be written as
degrees (``±DD.D``), degrees+minutes (``±DDMM.M``) or degrees+minutes+seconds
(``±DDMMSS.S``); the count of integer digits tells which.

The parser is strict: anything else (a missing sign, a minute ≥ 60, a latitude beyond
90°, stray text) gives None, because a wrong position is worse than none.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_NUMBER = r"[+-]\d+(?:\.\d+)?"
_ISO6709 = re.compile(
    rf"^(?P<lat>{_NUMBER})(?P<lon>{_NUMBER})(?P<alt>{_NUMBER})?(?:CRS[A-Za-z0-9_:.-]+)?/?$"
)


@dataclass(frozen=True)
class Position:
    """Signed decimal degrees (north and east positive), altitude in metres or None."""

    latitude: float
    longitude: float
    altitude: float | None


def parse_iso6709(text: object) -> Position | None:
    """The position in an ISO 6709 string, or None when it is not one (see module doc)."""
    if not isinstance(text, str):
        return None
    match = _ISO6709.match(text.strip())
    if match is None:
        return None
    latitude = _angle(match.group("lat"), degree_digits=2)
    longitude = _angle(match.group("lon"), degree_digits=3)
    if latitude is None or longitude is None or abs(latitude) > 90 or abs(longitude) > 180:
        return None
    altitude = match.group("alt")
    return Position(latitude, longitude, float(altitude) if altitude is not None else None)


def _angle(text: str, *, degree_digits: int) -> float | None:
    sign = -1.0 if text[0] == "-" else 1.0
    whole, _, fraction = text[1:].partition(".")
    fraction = "0." + (fraction or "0")
    # D, DM or DMS: 2/4/6 integer digits for latitude, 3/5/7 for longitude
    if len(whole) == degree_digits:
        degrees, minutes, seconds = float(whole + fraction[1:]), 0.0, 0.0
    elif len(whole) == degree_digits + 2:
        degrees = float(whole[:degree_digits])
        minutes, seconds = float(whole[degree_digits:]) + float(fraction), 0.0
    elif len(whole) == degree_digits + 4:
        degrees = float(whole[:degree_digits])
        minutes = float(whole[degree_digits : degree_digits + 2])
        seconds = float(whole[degree_digits + 2 :]) + float(fraction)
    else:
        return None
    if minutes >= 60 or seconds >= 60:
        return None
    return sign * (degrees + minutes / 60 + seconds / 3600)
