"""What an XMP sidecar says about its photo or video: when it was taken and where.

Editors keep what the user changed about a RAW (or any file they will not rewrite) in
an ``.xmp`` file beside it: darktable and digiKam as ``IMG_1.CR2.xmp``, Lightroom and
Capture One as ``IMG_1.xmp``. A capture time corrected there, or a position placed on
a map, is the user's word on that file: it outranks what the camera wrote
(``capture_time.SOURCES``: ``xmp_sidecar`` first).

Only the capture time (``exif:DateTimeOriginal``, else ``photoshop:DateCreated``) and
the GPS position are taken; ``xmp:CreateDate``, ``ModifyDate`` and ``MetadataDate``
say when a file was made or edited, not when the picture was. The sidecar is read
with exiftool (``media.exiftool``); without it, sidecars are not read.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from photo_pipeline.media.capture_time import CaptureTime
from photo_pipeline.media.errors import UNREADABLE_FILE, MediaError
from photo_pipeline.media.exiftool import ExiftoolError, ExiftoolPool, shared_pool
from photo_pipeline.media.hidden_dates import hidden_capture_time
from photo_pipeline.media.places import valid_position

if TYPE_CHECKING:  # the decoders behind it load only where a photo is read
    from photo_pipeline.media.metadata import MediaMetadata

SOURCE = "xmp_sidecar"
# A sidecar is a few kB (a darktable history, some hundred); more is not one.
MAX_SIDECAR_BYTES = 4 << 20
_REQUEST = (
    "-XMP-exif:DateTimeOriginal",
    "-XMP-photoshop:DateCreated",
    "-XMP-exif:GPSLatitude",
    "-XMP-exif:GPSLongitude",
    "-XMP-exif:GPSAltitude",
    "-XMP-exif:GPSAltitudeRef",
)
_TAKEN_SOURCES = frozenset({"xmp_original", "xmp_date_created"})

Position = tuple[float, float, float | None]  # latitude, longitude, altitude (m)


@dataclass(frozen=True)
class SidecarFacts:
    """The capture time and position a sidecar gives, each None when it has none."""

    taken: CaptureTime | None = None
    position: Position | None = None

    def __bool__(self) -> bool:
        return self.taken is not None or self.position is not None


def sidecar_names(name: str) -> tuple[str, ...]:
    """The names a sidecar of the file ``name`` may have, most specific first:
    ``IMG_1.CR2.xmp`` (this file's alone) before ``IMG_1.xmp`` (which a RAW and its
    JPEG share); each in both cases of the extension."""
    stem = os.path.splitext(name)[0]
    names = (f"{base}.{ext}" for base in (name, stem) for ext in ("xmp", "XMP"))
    return tuple(dict.fromkeys(names))  # once each (a name without extension is its stem)


def read_sidecar(
    path: str, time_limit: float, pool: ExiftoolPool | None = None
) -> SidecarFacts | None:
    """The facts of the XMP sidecar at ``path`` (none: not XMP), or None without
    exiftool; MediaError (``unreadable_file``) when exiftool fails on it."""
    pool = pool or shared_pool()
    try:
        found = pool.read_tags(path, _REQUEST, time_limit)
    except ExiftoolError as exc:
        raise MediaError(UNREADABLE_FILE, f"exiftool: {exc}") from exc
    if found is None:
        return None
    taken = hidden_capture_time(found)
    if taken is not None and taken.source in _TAKEN_SOURCES:
        taken = CaptureTime(taken.local, taken.offset_minutes, SOURCE)
    else:
        taken = None
    return SidecarFacts(taken, _position(found))


def with_sidecar(metadata: MediaMetadata, facts: SidecarFacts) -> MediaMetadata:
    """``metadata`` with what the sidecar says in place of the file's own."""
    if facts.taken is not None:
        metadata = replace(metadata, taken=facts.taken)
    if facts.position is not None:
        metadata = with_position(metadata, facts.position)
    return metadata


def with_position(metadata: MediaMetadata, position: Position) -> MediaMetadata:
    latitude, longitude, altitude = position
    return replace(metadata, gps_latitude=latitude, gps_longitude=longitude, gps_altitude=altitude)


def _position(found: dict[str, object]) -> Position | None:
    altitude = finite_number(found.get("XMP:XMP-exif:GPSAltitude"))
    if altitude is not None and finite_number(found.get("XMP:XMP-exif:GPSAltitudeRef")) == 1:
        altitude = -altitude  # ref 1 = below sea level
    return checked_position(
        finite_number(found.get("XMP:XMP-exif:GPSLatitude")),
        finite_number(found.get("XMP:XMP-exif:GPSLongitude")),
        altitude,
    )


def checked_position(
    latitude: float | None, longitude: float | None, altitude: float | None
) -> Position | None:
    """A real position (``places.valid_position``: in range, not 0, 0), or None."""
    found = valid_position(latitude, longitude)
    return None if found is None else (*found, altitude)


def finite_number(value: object) -> float | None:
    """A finite number from a number or its text (exiftool's ``-n``, JSON), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None
