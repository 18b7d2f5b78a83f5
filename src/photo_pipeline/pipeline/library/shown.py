"""What a person is shown of an asset row, beside the raw catalogue values (which stay
as the file said them): how far its date can be trusted, its camera's name read as
people name it, its place in one line, and the name of a file that holds it."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import files, sources
from photo_pipeline.media.camera_names import display_camera
from photo_pipeline.media.capture_time import UNDATED_SOURCES, confidence
from photo_pipeline.pipeline.files.paths import display
from photo_pipeline.pipeline.library.catalog.states import PRESENT

_ID_CHUNK = 500


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


def first_files(session: Session, asset_ids: Iterable[int]) -> dict[int, dict[str, str]]:
    """For each asset, the first of its present files (by folder, then path):
    ``{"name", "source", "path"}``, ``path`` relative to the source, as shown."""
    ids = sorted(set(asset_ids))
    found: dict[int, dict[str, str]] = {}
    for at in range(0, len(ids), _ID_CHUNK):
        query = (
            select(files.c.asset_id, files.c.path, sources.c.path.label("source"))
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id.in_(ids[at : at + _ID_CHUNK]), files.c.state == PRESENT)
            .order_by(files.c.asset_id, sources.c.path, files.c.path)
        )
        for asset_id, path, source in session.execute(query):
            if asset_id not in found:
                shown = display(path)
                found[asset_id] = {
                    "name": PurePosixPath(shown).name,
                    "source": source,
                    "path": shown,
                }
    return found


def with_first_files(session: Session, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` each with ``name`` and ``file`` ({source, path}) of its first present
    file (None for an asset without one)."""
    first = first_files(session, [row["id"] for row in rows])
    for row in rows:
        held = first.get(row["id"])
        row["name"] = held["name"] if held else None
        row["file"] = {"source": held["source"], "path": held["path"]} if held else None
    return rows
