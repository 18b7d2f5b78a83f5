"""Capture dates the fast readers do not see: XMP, maker notes, QuickTime keys, AVCHD.

Pillow and exifread read EXIF (``media.tags``), PyAV a video's container tags
(``media.video``): fast, and enough for nearly every camera and phone file. Some files
keep their date elsewhere: an editor's or scanner's XMP (``exif:DateTimeOriginal``,
``photoshop:DateCreated``, ``xmp:CreateDate``, with their offsets), a camera's maker note
(Pentax Date/Time, Panasonic TimeStamp, Sony, Olympus, Casio…), XMP inside a MOV, the
H.264 stream of an AVCHD clip. Those are read through exiftool (``media.exiftool``), and
only when the fast reader found nothing better than what exiftool could add: a photo
with EXIF DateTimeOriginal or a video with Apple's local creationdate never pays for it.
``media.capture_time.SOURCES`` orders all sources; the best one found wins.
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from photo_pipeline.media.capture_time import (
    CaptureTime,
    best,
    parse_date_only,
    parse_exif_datetime,
    parse_offset,
)
from photo_pipeline.media.exiftool import ExiftoolError, ExiftoolPool, shared_pool

log = logging.getLogger(__name__)

# exiftool's date and time tags (its "Time" family 2 group), file system dates left out
REQUEST = ("-time:all", "--System:all")
# A capture time from one of these needs no second look (a local QuickTime date only
# with its offset).
FINAL_SOURCES = frozenset({"exif_original", "quicktime_local"})

# Maker-note tags (exiftool's names) that hold the capture time, best first. Others in
# that group are not capture times: PowerUpTime, ManufactureDate, firmware dates…
_MAKERNOTE_DATES = (
    "DateTimeOriginal",  # Casio, Kodak, Olympus, Nikon (MOV), Sony (PMP), Reconyx…
    "SonyDateTime",
    "PanasonicDateTime",
    "TimeStamp",  # Panasonic, Canon (CameraInfo), Samsung
    "CameraDateTime",  # HP
    "NikonDateTime",
    "CreateDate",
)
_QUICKTIME_DATES = ("CreationDate", "DateTimeOriginal", "ContentCreateDate")


class _Tags:
    """exiftool's ``Group0:Group1:Name`` keys, looked up by family-0 group and name."""

    def __init__(self, found: Mapping[str, Any]) -> None:
        self._by: dict[tuple[str, str], list[tuple[str, Any]]] = defaultdict(list)
        for key, value in found.items():
            parts = key.split(":")
            group0, name = parts[0], parts[-1]
            group1 = parts[1] if len(parts) == 3 else group0
            self._by[group0, name].append((group1, value))

    def values(self, group0: str, name: str, group1: str | None = None) -> list[Any]:
        return [v for g1, v in self._by.get((group0, name), []) if group1 in (None, g1)]

    def text(self, group0: str, name: str, group1: str | None = None) -> str | None:
        for value in self.values(group0, name, group1):
            if isinstance(value, (str, int)) and str(value).strip():
                return str(value).strip()
        return None

    def groups(self, group0: str, name: str) -> list[tuple[str, Any]]:
        return self._by.get((group0, name), [])


def hidden_capture_time(found: Mapping[str, Any]) -> CaptureTime | None:
    """The best capture time in exiftool's tags (as :data:`REQUEST` asks them), or None."""
    tags = _Tags(found)
    return best(*(read(tags) for read in _READERS))


def _dated(text: str | None, source: str, offset: int | None = None) -> CaptureTime | None:
    parsed = parse_exif_datetime(text)
    if parsed is None:
        return None
    local, inline = parsed
    return CaptureTime(local, inline if inline is not None else offset, source)


def _exif_offset(tags: _Tags, *names: str) -> int | None:
    for name in (*names, "OffsetTime"):
        minutes = parse_offset(tags.text("EXIF", name))
        if minutes is not None:
            return minutes
    return None


def _exif_original(tags: _Tags) -> CaptureTime | None:
    # Composite:SubSecDateTimeOriginal is exiftool's sum of the date, sub-seconds, offset
    combined = _dated(tags.text("Composite", "SubSecDateTimeOriginal"), "exif_original")
    offset = _exif_offset(tags, "OffsetTimeOriginal")
    return combined or _dated(tags.text("EXIF", "DateTimeOriginal"), "exif_original", offset)


def _exif_digitized(tags: _Tags) -> CaptureTime | None:
    combined = _dated(tags.text("Composite", "SubSecCreateDate"), "exif_digitized")
    offset = _exif_offset(tags, "OffsetTimeDigitized")
    return combined or _dated(tags.text("EXIF", "CreateDate"), "exif_digitized", offset)


def _xmp(name: str, group1: str, source: str) -> Callable[[_Tags], CaptureTime | None]:
    def read(tags: _Tags) -> CaptureTime | None:
        return _dated(tags.text("XMP", name, group1), source)

    return read


def _date_created(tags: _Tags) -> CaptureTime | None:
    """IPTC's "date created", as XMP photoshop:DateCreated or IPTC-IIM DateCreated +
    TimeCreated (the MWG reads them as one field, beside EXIF DateTimeOriginal). A
    value with a time of day comes before a date alone, whichever holds it: Photo
    Mechanic writes the XMP date without its time and keeps the time in IPTC."""
    # Composite:DateTimeCreated is exiftool's sum of IPTC DateCreated and TimeCreated.
    candidates = (
        (tags.text("XMP", "DateCreated", "XMP-photoshop"), "xmp_date_created"),
        (tags.text("Composite", "DateTimeCreated"), "iptc_date_created"),
        (tags.text("IPTC", "DateCreated"), "iptc_date_created"),
    )
    for text, source in candidates:
        timed = parse_exif_datetime(text)
        if timed is not None:
            return CaptureTime(timed[0], timed[1], source)
    for text, source in candidates:
        day = parse_date_only(text)
        if day is not None:
            return CaptureTime(day, None, source)
    return None


def _makernote(tags: _Tags) -> CaptureTime | None:
    # the camera's zone, when it wrote one in EXIF at all, is the one of its clock
    offset = _exif_offset(tags, "OffsetTimeOriginal")
    for name in _MAKERNOTE_DATES:
        for value in tags.values("MakerNotes", name):
            found = _dated(str(value), "makernote", offset)
            if found is not None:
                return found
    # Pentax (and Kodak) keep the date and the time in two tags of one group
    for group1, date in tags.groups("MakerNotes", "Date"):
        time = tags.text("MakerNotes", "Time", group1)
        if time is not None:
            found = _dated(f"{date} {time}", "makernote", offset)
            if found is not None:
                return found
    return None


def _avchd(tags: _Tags) -> CaptureTime | None:
    return _dated(tags.text("H264", "DateTimeOriginal"), "avchd")


def _quicktime(tags: _Tags) -> CaptureTime | None:
    # Apple's creationdate and the date keys and ©day some cameras and apps write (local
    # time, usually with an offset); QuickTime's own CreateDate (UTC) PyAV already reads
    found = [
        taken
        for name in _QUICKTIME_DATES
        for value in tags.values("QuickTime", name)
        if (taken := _dated(str(value), "quicktime_local")) is not None
    ]
    with_offset = [taken for taken in found if taken.offset_minutes is not None]
    return next(iter(with_offset or found), None)


_READERS: tuple[Callable[[_Tags], CaptureTime | None], ...] = (
    _exif_original,
    _xmp("DateTimeOriginal", "XMP-exif", "xmp_original"),
    _date_created,
    _makernote,
    _avchd,
    _exif_digitized,
    _xmp("CreateDate", "XMP-xmp", "xmp_create_date"),
    _quicktime,
)


def with_hidden_dates(
    taken: CaptureTime,
    fp: BinaryIO,
    path: Path,
    time_limit: float,
    pool: ExiftoolPool | None = None,
) -> CaptureTime:
    """``taken`` (the fast reader's) or, when it is not final, a better capture time that
    exiftool finds in the open file ``fp`` (``path``). Without exiftool, or when it fails
    on this file (a warning says so), ``taken`` stays."""
    if taken.source in FINAL_SOURCES and (
        taken.offset_minutes is not None or taken.source != "quicktime_local"
    ):
        return taken
    pool = pool or shared_pool()
    try:
        found = pool.read_tags(_name_of(fp, path), REQUEST, time_limit)
    except ExiftoolError as exc:
        log.warning("%s: hidden dates not read (%s); date from %s", path, exc, taken.source)
        return taken
    if not found:
        return taken
    return best(taken, hidden_capture_time(found)) or taken


def _name_of(fp: BinaryIO, path: Path) -> str:
    """A name for exactly the file the caller opened: its descriptor, where /proc has it."""
    own = f"/proc/{os.getpid()}/fd"
    return f"{own}/{fp.fileno()}" if os.path.isdir(own) else str(path)
