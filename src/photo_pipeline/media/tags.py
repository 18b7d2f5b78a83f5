"""EXIF tags from Pillow or exifread, normalised into plain Python values."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, BinaryIO

import exifread
from PIL import ExifTags, Image

from photo_pipeline.media.capture_time import (
    CaptureTime,
    capture_time_from_filename,
    file_time,
    gps_datetime,
    parse_exif_datetime,
    parse_offset,
)

Base = ExifTags.Base
GPS = ExifTags.GPS

# exifread logs "PNG file does not have exif data." and the like as warnings, which
# Python's last-resort handler prints to stderr for every such file. A missing EXIF block
# is normal (screenshots); damaged ones are handled below. Only its errors are worth seeing.
logging.getLogger("exifread").setLevel(logging.ERROR)


@dataclass(frozen=True)
class TagSet:
    """Numeric EXIF tag -> value, for IFD0, the Exif IFD and the GPS IFD."""

    base: Mapping[int, Any] = field(default_factory=dict)
    exif: Mapping[int, Any] = field(default_factory=dict)
    gps: Mapping[int, Any] = field(default_factory=dict)

    def photo(self, tag: int) -> Any:
        """A capture tag from the Exif IFD, else IFD0 (TIFF/EP raws keep some there)."""
        value = self.exif.get(tag)
        return self.base.get(tag) if value is None else value


def tags_from_pillow(exif: Image.Exif) -> TagSet:
    """Collect IFD0, Exif and GPS tags from a Pillow ``Image.Exif``, tolerating damage."""
    groups: list[dict[int, Any]] = []
    for ifd in (None, ExifTags.IFD.Exif, ExifTags.IFD.GPSInfo):
        try:
            # a broken sub-IFD offset must cost that IFD only, not the whole photo
            groups.append(dict(exif if ifd is None else exif.get_ifd(ifd)))
        except Exception:
            groups.append({})
    return TagSet(*groups)


def tags_from_exifread(tags: Mapping[str, Any]) -> TagSet:
    """Regroup exifread's ``"IFD Name"`` keyed tags by numeric id."""
    groups: dict[str, dict[int, Any]] = {"Image": {}, "EXIF": {}, "GPS": {}}
    for key, tag in tags.items():
        group = groups.get(key.split(" ", 1)[0])
        number = getattr(tag, "tag", None)
        if group is not None and isinstance(number, int):
            group[number] = tag.values
    return TagSet(groups["Image"], groups["EXIF"], groups["GPS"])


def tags_from_file(fp: BinaryIO) -> TagSet:
    """Read EXIF with exifread (TIFF/RAW IFDs, PNG eXIf anywhere); unreadable gives none."""
    fp.seek(0)
    try:
        # details=False: MakerNotes are slow, fragile and hold nothing we need
        found = exifread.process_file(fp, details=False, extract_thumbnail=False)
    except MemoryError:
        raise
    except Exception:
        return TagSet()  # a damaged EXIF block costs the metadata, never the photo
    return tags_from_exifread(found)


def _one(value: Any) -> Any:
    """The first element of a sequence (exifread always gives lists, Pillow sometimes)."""
    if isinstance(value, (list, tuple)) and value:
        return value[0]
    return value


def as_text(value: Any) -> str | None:
    """A stripped string cut at its first NUL, or None for empty/absent values."""
    value = _one(value)
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    if not isinstance(value, str):
        return None
    # EXIF ASCII ends at its NUL: what follows is the rest of a fixed-size buffer (and
    # PostgreSQL stores no NUL: "WWL ION230\x00F" would fail the file's whole batch).
    value = value.lstrip("\x00").split("\x00", 1)[0].strip(" \t\r\n")
    return value or None


def as_float(value: Any) -> float | None:
    """A finite float from an int, float or rational (zero denominators give None)."""
    value = _one(value)
    if isinstance(value, (str, bytes, list, tuple)) or value is None:
        return None
    try:
        number = float(value)
    except (TypeError, ValueError, ZeroDivisionError, OverflowError):
        return None
    return number if math.isfinite(number) else None


def as_int(value: Any) -> int | None:
    """An int from a number, a rational or a one-byte value."""
    value = _one(value)
    if isinstance(value, bytes):
        return value[0] if len(value) == 1 else None
    number = as_float(value)
    return None if number is None else int(number)


def as_floats(value: Any) -> tuple[float, ...] | None:
    """A tuple of finite floats from a sequence of numbers/rationals."""
    if not isinstance(value, Sequence) or isinstance(value, (str, bytes)):
        single = as_float(value)
        return None if single is None else (single,)
    numbers = tuple(as_float(item) for item in value)
    if not numbers or any(number is None for number in numbers):
        return None
    return numbers  # type: ignore[return-value]


def _positive(value: float | None) -> float | None:
    return value if value is not None and value > 0 else None


@dataclass(frozen=True)
class CameraFields:
    """The camera and exposure fields of PhotoMetadata."""

    make: str | None
    model: str | None
    lens: str | None
    focal_length_mm: float | None
    f_number: float | None
    exposure_seconds: float | None
    iso: int | None


def camera_fields(tags: TagSet) -> CameraFields:
    """Camera, lens and exposure settings, each None when absent or nonsensical."""
    f_number = _positive(as_float(tags.photo(Base.FNumber)))
    if f_number is None:
        aperture = as_float(tags.photo(Base.ApertureValue))  # APEX: N = 2 ** (Av / 2)
        f_number = round(2 ** (aperture / 2), 1) if aperture is not None and aperture < 64 else None
    exposure = _positive(as_float(tags.photo(Base.ExposureTime)))
    if exposure is None:
        shutter = as_float(tags.photo(Base.ShutterSpeedValue))  # APEX: t = 2 ** -Tv
        exposure = 2.0**-shutter if shutter is not None and abs(shutter) < 64 else None
    iso = as_int(tags.photo(Base.ISOSpeedRatings))
    if iso is None or iso == 65535:  # 65535 means "see ISOSpeed" on high-ISO bodies
        iso = as_int(tags.photo(Base.ISOSpeed)) or iso
    return CameraFields(
        make=as_text(tags.base.get(Base.Make)),
        model=as_text(tags.base.get(Base.Model)),
        lens=as_text(tags.photo(Base.LensModel)),
        focal_length_mm=_positive(as_float(tags.photo(Base.FocalLength))),
        f_number=f_number,
        exposure_seconds=exposure,
        iso=iso if iso is not None and iso > 0 else None,
    )


def orientation(tags: TagSet) -> int:
    """EXIF orientation 1..8; absent or out-of-range values mean 1 (as stored)."""
    value = as_int(tags.base.get(Base.Orientation))
    return value if value is not None and 1 <= value <= 8 else 1


def _degrees(value: Any, ref: Any, negative_refs: str) -> float | None:
    parts = as_floats(value)
    if parts is None or not 1 <= len(parts) <= 3:
        return None
    # degrees, minutes, seconds; writers that store decimal degrees leave the rest 0
    degrees = sum(part / 60**i for i, part in enumerate(parts))
    reference = (as_text(ref) or "").upper()[:1]
    if reference and reference in negative_refs:
        return -abs(float(degrees))
    return float(degrees)


def gps_position(tags: TagSet) -> tuple[float | None, float | None, float | None]:
    """Signed decimal latitude, longitude and altitude (m); None where unknown."""
    gps = tags.gps
    if (as_text(gps.get(GPS.GPSStatus)) or "").upper() == "V":
        return None, None, None  # "void": the receiver had no fix
    lat = _degrees(gps.get(GPS.GPSLatitude), gps.get(GPS.GPSLatitudeRef), "S")
    lon = _degrees(gps.get(GPS.GPSLongitude), gps.get(GPS.GPSLongitudeRef), "W")
    if lat is None or lon is None or abs(lat) > 90 or abs(lon) > 180:
        lat = lon = None
    altitude = as_float(gps.get(GPS.GPSAltitude))
    if altitude is not None and as_int(gps.get(GPS.GPSAltitudeRef)) == 1:
        altitude = -altitude  # ref 1 = below sea level
    return lat, lon, altitude


# (source, date tag, sub-second tag, offset tag), best first
_EXIF_DATES = (
    ("exif_original", Base.DateTimeOriginal, Base.SubsecTimeOriginal, Base.OffsetTimeOriginal),
    ("exif_digitized", Base.DateTimeDigitized, Base.SubsecTimeDigitized, Base.OffsetTimeDigitized),
)


def capture_time(tags: TagSet, name: str, mtime: datetime) -> CaptureTime:
    """Pick the capture time: EXIF original, EXIF digitized, GPS, file name, then mtime."""
    fallback_offset = parse_offset(as_text(tags.photo(Base.OffsetTime)))
    for source, when, subsec, offset in _EXIF_DATES:
        parsed = parse_exif_datetime(as_text(tags.photo(when)), as_text(tags.photo(subsec)))
        if parsed is not None:
            local, inline_offset = parsed
            minutes = parse_offset(as_text(tags.photo(offset)))
            if minutes is None:
                minutes = inline_offset if inline_offset is not None else fallback_offset
            return CaptureTime(local, minutes, source)
    gps_time = gps_datetime(
        as_text(tags.gps.get(GPS.GPSDateStamp)), as_floats(tags.gps.get(GPS.GPSTimeStamp))
    )
    if gps_time is not None:
        return CaptureTime(gps_time, 0, "gps")
    from_name = capture_time_from_filename(name)
    if from_name is not None:
        return CaptureTime(from_name, None, "filename")
    return file_time(mtime)
