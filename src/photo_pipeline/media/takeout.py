"""What a Google Takeout JSON says about the photo or video beside it.

A Google Photos export keeps a photo's capture time and position in a JSON file next
to it (``photoTakenTime``: UTC seconds; ``geoData``: the position, edited or as the
camera wrote it). Many exported photos have no date of their own left (screenshots,
messaging apps' copies, edits), and every file's mtime is the day of the export: the
JSON is then the only capture time there is. It ranks just above the mtime
(``capture_time.SOURCES``: ``takeout``), a UTC time like GPS time (the zone at the
position makes it local); its position is taken when the file has none.

Which JSON is a file's: :mod:`media.takeout_names`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime

from photo_pipeline.media.capture_time import CaptureTime, best
from photo_pipeline.media.metadata import MediaMetadata
from photo_pipeline.media.sidecar import (
    Position,
    SidecarFacts,
    checked_position,
    finite_number,
    with_position,
)

SOURCE = "takeout"
MAX_JSON_BYTES = 1 << 20  # a few hundred bytes each
_LAST_SECOND = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp()


def read_takeout(data: bytes) -> SidecarFacts | None:
    """The capture time and position of a Takeout JSON, or None when it is not one."""
    try:
        document = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return None
    if not isinstance(document, dict):
        return None
    position = _position(document.get("geoData")) or _position(document.get("geoDataExif"))
    return SidecarFacts(_taken(document.get("photoTakenTime")), position)


def with_takeout(metadata: MediaMetadata, facts: SidecarFacts) -> MediaMetadata:
    """``metadata`` with what the JSON adds: a capture time better than the file's
    (its mtime), a position where it has none."""
    taken = best(metadata.taken, facts.taken) or metadata.taken
    if taken is not metadata.taken:
        metadata = replace(metadata, taken=taken)
    if metadata.gps_latitude is None and facts.position is not None:
        metadata = with_position(metadata, facts.position)
    return metadata


def _taken(value: object) -> CaptureTime | None:
    if not isinstance(value, dict):
        return None
    seconds = finite_number(value.get("timestamp"))
    if seconds is None or not 0 < seconds <= _LAST_SECOND:
        return None  # 0: Takeout's "unknown"
    instant = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
    return CaptureTime(instant, 0, SOURCE)


def _position(value: object) -> Position | None:
    if not isinstance(value, dict):
        return None
    altitude = finite_number(value.get("altitude")) or None  # 0: unknown as often as sea level
    return checked_position(
        finite_number(value.get("latitude")), finite_number(value.get("longitude")), altitude
    )
