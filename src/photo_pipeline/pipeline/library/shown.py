"""What a person is shown of an asset row, beside the raw catalogue values (which stay
as the file said them): how far its date can be trusted, its camera's name read as
people name it, and its place in one line (pure: no database)."""

from __future__ import annotations

from typing import Any

from photo_pipeline.media.camera_names import display_camera
from photo_pipeline.media.capture_time import UNDATED_SOURCES, confidence


def place_line(row: dict[str, Any]) -> str | None:
    """``Mitte, Berlin, Germany``: the district (where part of a larger city), the city
    and the country, those known; None without any."""
    parts: list[str] = []
    for key in ("district", "city", "country"):
        value = row.get(key)
        if value and value not in parts:
            parts.append(value)
    return ", ".join(parts) or None


def shown_fields(row: dict[str, Any]) -> dict[str, Any]:
    """``taken_confidence`` (media.capture_time.CONFIDENCES), ``undated`` (only the
    file's mtime dates it), ``camera`` (media.camera_names) and ``place``."""
    source = row.get("taken_source") or ""
    return {
        "taken_confidence": confidence(source),
        "undated": source in UNDATED_SOURCES,
        "camera": display_camera(row.get("make"), row.get("model")),
        "place": place_line(row),
    }


def with_shown_fields(row: dict[str, Any]) -> dict[str, Any]:
    row.update(shown_fields(row))
    return row
