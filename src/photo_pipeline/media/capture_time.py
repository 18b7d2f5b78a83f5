"""When a photo was taken: parse EXIF/GPS/filename dates and pick the best source."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import PurePath

# Photography began in 1826; earlier "dates" are unset camera clocks or garbage.
_MIN_YEAR = 1826
# 9999:12:31 is a placeholder, not a date; and a year later than this could leave what
# a datetime holds once moved to UTC or another zone (OverflowError).
_MAX_YEAR = 9998
_MAX_OFFSET_MINUTES = 14 * 60

# Where a capture time came from, best first: a photo or video gets the first that it has.
SOURCES = (
    "user",  # set in the catalogue by the user (``timeshift --set``), never read from a file
    "xmp_sidecar",  # the user's word: an editor's sidecar beside the file (media.sidecar)
    "exif_original",
    "xmp_original",  # XMP exif:DateTimeOriginal (editors, and files whose EXIF was lost)
    "xmp_date_created",  # XMP photoshop:DateCreated (IPTC's date created)
    "iptc_date_created",  # IPTC-IIM DateCreated + TimeCreated (news, archives, scans)
    "makernote",  # a date in the camera's maker note (Pentax, Panasonic, Sony, Canon…)
    "avchd",  # the date an AVCHD camera writes into its H.264 stream (MDPM)
    "exif_digitized",
    "xmp_create_date",  # XMP xmp:CreateDate: the digitized date in the MWG's mapping
    "quicktime_local",  # Apple's creationdate or a QuickTime date key: wall clock + offset
    "gps",
    "quicktime_utc",  # QuickTime/MP4 creation_time: UTC, the wall clock unknown
    "filename",
    "takeout",  # a Google Takeout JSON's photoTakenTime (UTC; media.takeout)
    "mtime",
)
_RANK = {source: rank for rank, source in enumerate(SOURCES)}
# Sources whose instant is UTC but say nothing of the local wall clock: the zone at the
# GPS position (media.places) turns them into local time.
UTC_CLOCK_SOURCES = frozenset({"gps", "quicktime_utc", "takeout"})
# The file's mtime is an instant too, shown on this machine's clock (its offset then, when
# known, makes the instant): at a GPS position it is the local time there, not this
# machine's wall clock with the photo's zone attached.
MACHINE_CLOCK_SOURCES = frozenset({"mtime"})

# How far a capture time can be trusted, from its source, most trusted first. "user": the
# user set it (``timeshift --set``), so it is the date they mean. "camera":
# written by the camera or an editor at capture or curation; "inferred": an instant a
# service or satellite recorded, its wall clock worked out from the zone; "filename": the
# name a phone or app gave the file; "file_time": only the file's mtime, which is when a
# copy was made as often as when a photo was taken, so such a file counts as undated.
CONFIDENCES = ("user", "camera", "inferred", "filename", "file_time")
_CONFIDENCE = {
    **{source: "camera" for source in SOURCES},
    "user": "user",
    "gps": "inferred",
    "takeout": "inferred",
    "filename": "filename",
    "mtime": "file_time",
}
# The sources whose date is no evidence of when the photo was taken.
UNDATED_SOURCES = frozenset(source for source, level in _CONFIDENCE.items() if level == "file_time")


def confidence(source: str) -> str:
    """How far a capture time from ``source`` can be trusted (:data:`CONFIDENCES`)."""
    return _CONFIDENCE.get(source, "file_time")


@dataclass(frozen=True)
class CaptureTime:
    """A capture instant as the camera's wall clock plus, when known, its UTC offset."""

    local: datetime
    offset_minutes: int | None
    source: str

    @property
    def utc(self) -> datetime | None:
        """The aware UTC instant, or None while the offset is unknown ("floating" time)."""
        if self.offset_minutes is None:
            return None
        zone = timezone(timedelta(minutes=self.offset_minutes))
        return self.local.replace(tzinfo=zone).astimezone(UTC)


def best(*found: CaptureTime | None) -> CaptureTime | None:
    """The capture time from the best source (:data:`SOURCES`); the first among equals."""
    candidates = [taken for taken in found if taken is not None]
    return min(candidates, key=lambda taken: _RANK[taken.source], default=None)


_EXIF_DATETIME = re.compile(
    r"^\s*(\d{4})[:\-/.](\d{1,2})[:\-/.](\d{1,2})[ T]+(\d{1,2}):(\d{1,2})"
    r"(?::(\d{1,2})(?:[.,](\d+))?)?\s*(Z|[+-]\d{1,2}:?\d{2})?\s*$"
)
_OFFSET = re.compile(r"^\s*(?:(Z)|([+-])(\d{1,2}):?(\d{2}))\s*$")


def _make(
    year: str,
    month: str,
    day: str,
    hour: str = "0",
    minute: str = "0",
    second: str = "0",
    frac: str = "",
) -> datetime | None:
    try:
        value = datetime(int(year), int(month), int(day), int(hour), int(minute), int(second))
    except ValueError:
        return None  # month 13, day 0, year 0000, hour 24 …
    if not _MIN_YEAR <= value.year <= _MAX_YEAR:
        return None
    return value.replace(microsecond=int(frac[:6].ljust(6, "0"))) if frac else value


def parse_offset(text: object) -> int | None:
    """Parse an EXIF OffsetTime* value such as ``+02:00`` into minutes; garbage gives None."""
    if not isinstance(text, str):
        return None
    match = _OFFSET.match(text.strip("\x00"))
    if match is None:
        return None
    if match.group(1):
        return 0
    minutes = int(match.group(3)) * 60 + int(match.group(4))
    if int(match.group(4)) >= 60 or minutes > _MAX_OFFSET_MINUTES:
        return None
    return -minutes if match.group(2) == "-" else minutes


def parse_exif_datetime(text: object, subsec: object = None) -> tuple[datetime, int | None] | None:
    """Parse an EXIF date plus SubSecTime into (naive time, inline offset); garbage gives None."""
    if not isinstance(text, str):
        return None
    match = _EXIF_DATETIME.match(text.strip("\x00"))
    if match is None:
        return None
    year, month, day, hour, minute, second, frac, offset = match.groups()
    if not frac and isinstance(subsec, str):
        digits = subsec.strip("\x00 ")
        frac = digits if digits.isascii() and digits.isdigit() else ""
    value = _make(year, month, day, hour, minute, second or "0", frac or "")
    if value is None:
        return None
    return value, parse_offset(offset) if offset else None


_DATE_ONLY = re.compile(r"^\s*(\d{4})[:\-/.](\d{1,2})[:\-/.](\d{1,2})\s*$")


def parse_date_only(text: object) -> datetime | None:
    """Parse a date without a time (IPTC DateCreated ``2004:02:26``, XMP
    ``photoshop:DateCreated="2006-10-29"``, as archives and scans often carry) into
    that day's midnight; garbage gives None."""
    if not isinstance(text, str):
        return None
    match = _DATE_ONLY.match(text.strip("\x00"))
    return _make(*match.groups()) if match else None


def gps_datetime(date_stamp: object, time_stamp: tuple[float, ...] | None) -> datetime | None:
    """Combine GPSDateStamp (``2023:07:14``) and GPSTimeStamp (h, m, s) into naive UTC."""
    if not isinstance(date_stamp, str) or not time_stamp or len(time_stamp) != 3:
        return None
    match = re.match(r"^\s*(\d{4})[:\-/.](\d{1,2})[:\-/.](\d{1,2})\s*$", date_stamp.strip("\x00"))
    if match is None:
        return None
    day = _make(*match.groups())
    hours, minutes, seconds = time_stamp
    if day is None or not (0 <= hours < 24 and 0 <= minutes < 60 and 0 <= seconds < 61):
        return None
    return day + timedelta(hours=hours, minutes=minutes, seconds=seconds)


# Date and time in a file name. Each pattern names y, m, d and optionally H, M, S, frac.
_FILENAME_PATTERNS = (
    # WhatsApp: IMG-20230714-WA0001 / VID-20230714-WA0001 — a date only
    re.compile(r"(?<![0-9])(?P<y>(?:19|20)\d{2})(?P<m>\d{2})(?P<d>\d{2})-WA\d+", re.IGNORECASE),
    # IMG_20230714_101530, PXL_20230714_101530123, 20230714_101530, 20230714-101530,
    # 2023-07-14 10.15.30, Screenshot_2023-07-14-10-15-30, Screenshot 2023-07-14 at 10.15.30
    re.compile(
        r"(?<![0-9])(?P<y>(?:19|20)\d{2})(?P<sep>[-_.]?)(?P<m>\d{2})(?P=sep)(?P<d>\d{2})"
        r"(?:[ _T-]|\s+at\s+)(?P<H>\d{2})(?P<tsep>[-_.:]?)(?P<M>\d{2})(?P=tsep)(?P<S>\d{2})"
        r"(?:[.,]?(?P<frac>\d{1,6}))?(?![0-9])"
    ),
    # a separated date alone, e.g. 2023-07-14.jpg or Trip_2023_07_14_beach.jpg
    re.compile(
        r"(?<![0-9])(?P<y>(?:19|20)\d{2})(?P<sep>[-_.])(?P<m>\d{2})(?P=sep)(?P<d>\d{2})(?![0-9])"
    ),
)


def capture_time_from_filename(name: str) -> datetime | None:
    """Read a capture date/time from common camera, phone and app file-name patterns."""
    stem = PurePath(name).name
    for pattern in _FILENAME_PATTERNS:
        for match in pattern.finditer(stem):
            parts = match.groupdict()
            value = _make(
                parts["y"],
                parts["m"],
                parts["d"],
                parts.get("H") or "0",
                parts.get("M") or "0",
                parts.get("S") or "0",
                parts.get("frac") or "",
            )
            if value is not None:
                return value
    return None


def file_time(mtime: datetime) -> CaptureTime:
    """The capture time a file's mtime gives: this machine's wall clock, with this
    machine's UTC offset at that moment when ``mtime`` is aware (the instant is then
    known, ``media.places`` shows it in the GPS zone), floating when naive."""
    if mtime.tzinfo is None:
        return CaptureTime(mtime, None, "mtime")
    here = mtime.astimezone()
    offset = here.utcoffset()
    minutes = None if offset is None else int(offset // timedelta(minutes=1))
    return CaptureTime(here.replace(tzinfo=None), minutes, "mtime")


def local_naive(moment: datetime) -> datetime:
    """Express ``moment`` as this machine's naive local wall-clock time (naive stays as is)."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone().replace(tzinfo=None)
