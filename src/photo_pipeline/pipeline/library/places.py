"""The places beside the map: countries → regions → cities with counts and bounds, read
from ``place_counts``, the summary that triggers on assets keep (migration 0030): a row
per stored place, so the listing costs the same at a million assets as at ten thousand.

A place counts the assets the map shows there (a Live Photo's motion half is shown by
its still); one is listed when at least one of them has a position (the map zooms to
their bounds). After a removal a place's bounds may be wider than its assets until its
last positioned asset leaves (as ``map_cells``' do); :func:`rebuild_place_counts`
counts them afresh.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, delete, func, select, text
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import place_counts

# The summary counted from the assets (migration 0030 counts with the same statement).
_REBUILD = """
INSERT INTO place_counts (country_code, country, region, city, count, located, south, north,
  west, east)
SELECT country_code, coalesce(country, ''), coalesce(region, ''), coalesce(city, ''),
  count(*), count(gps_latitude), min(gps_latitude), max(gps_latitude), min(gps_longitude),
  max(gps_longitude)
FROM assets WHERE country_code IS NOT NULL AND live_of IS NULL
GROUP BY country_code, coalesce(country, ''), coalesce(region, ''), coalesce(city, '')"""


def rebuild_place_counts(session: Session) -> None:
    """``place_counts`` counted afresh from the assets, in the caller's transaction
    (after a bulk load made with the triggers off, or to tighten bounds)."""
    session.execute(delete(place_counts))
    session.execute(text(_REBUILD))


def places(
    session: Session, country: str | None = None, region: str | None = None
) -> list[dict[str, Any]]:
    """Countries with counts; a country's regions (and its cities of no known region);
    a region's cities: each with its level and the bounds of its positioned assets."""
    if country is None:
        found = _level(session, "country", [])
    elif region is None:
        code = country.upper()
        found = _level(session, "region", [place_counts.c.country_code == code])
        found += _level(
            session, "city", [place_counts.c.country_code == code, place_counts.c.region == ""]
        )
    else:
        where = [place_counts.c.country_code == country.upper(), place_counts.c.region == region]
        found = _level(session, "city", where)
    found.sort(key=lambda p: (-p["count"], p["name"]))
    return found


def _level(session: Session, level: str, where: list[ColumnElement[bool]]) -> list[dict[str, Any]]:
    keys = [place_counts.c.country_code, place_counts.c[level]]
    query = (
        select(
            *keys,
            func.sum(place_counts.c.count).label("count"),
            func.sum(place_counts.c.located).label("located"),
            func.min(place_counts.c.south).label("south"),
            func.max(place_counts.c.north).label("north"),
            func.min(place_counts.c.west).label("west"),
            func.max(place_counts.c.east).label("east"),
        )
        .where(*where)
        .group_by(*keys)
    )
    found = []
    for row in session.execute(query):
        mapping = row._mapping
        name = mapping[level] or (mapping["country_code"] if level == "country" else None)
        if not name or not row.located or row.south is None:
            continue  # known only to the level above, or no position
        found.append(
            {
                "name": name,
                "level": level,
                "country_code": mapping["country_code"],
                "count": int(mapping["count"]),
                "bbox": [row.west, row.south, row.east, row.north],
            }
        )
    return found
