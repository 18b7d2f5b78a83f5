"""The map: clusters of the assets in a view (``/api/map``) and the places beside it
(``/api/places``), from ``pipeline.library.map``."""

from __future__ import annotations

import math
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.library.map import DEEPEST_ZOOM, MAX_PAGE, MapBrowser
from photo_pipeline.pipeline.library.map_grid import BITS, Box

router = APIRouter(tags=["map"], responses=PROBLEM_RESPONSES)


class MapCluster(BaseModel):
    count: int
    lat: float = Field(description="The mean position of its assets.")
    lon: float
    bbox: list[float] = Field(description="[west, south, east, north] of its assets.")
    asset_id: int = Field(description="One of its assets, for a thumbnail.")
    thumbnail_url: str | None = Field(description="Null until rendered.")


class MapAsset(BaseModel):
    id: int
    lat: float
    lon: float
    thumbnail_url: str | None = Field(description="Null until rendered.")


class MapAnswer(BaseModel):
    zoom: int
    clusters: list[MapCluster]
    assets: list[MapAsset] = Field(
        description="At the deepest zoom, the view's assets in pages; above it, the cells "
        "of one asset."
    )
    next_cursor: str | None


class Place(BaseModel):
    name: str
    level: Literal["country", "region", "city"]
    country_code: str
    count: int
    bbox: list[float]


class Places(BaseModel):
    places: list[Place]


def parse_bbox(value: str) -> Box:
    """``west,south,east,north`` in degrees; west > east crosses the antimeridian."""
    parts = value.split(",")
    try:
        west, south, east, north = (float(part) for part in parts)
    except ValueError:
        raise ApiError(
            422, "invalid_bbox", f"bbox: {value!r} is not west,south,east,north in degrees"
        ) from None
    if not all(math.isfinite(v) for v in (west, south, east, north)):
        raise ApiError(422, "invalid_bbox", "bbox: every bound must be a finite number")
    if not (-180 <= west <= 180 and -180 <= east <= 180):
        raise ApiError(422, "invalid_bbox", "bbox: longitudes must lie in -180..180")
    if not (-90 <= south <= north <= 90):
        raise ApiError(422, "invalid_bbox", "bbox: latitudes must lie in -90..90, south ≤ north")
    return Box(west, south, east, north)


def _cursor(value: str | None) -> tuple[int, int] | None:
    if value is None:
        return None
    try:
        cell, asset_id = (int(part) for part in value.split("."))
    except ValueError:
        raise ApiError(422, "invalid_cursor", f"cursor: {value!r} is not a map cursor") from None
    if cell >= 1 << (2 * BITS) or asset_id >= 1 << 63:
        raise ApiError(422, "invalid_cursor", f"cursor: {value!r} is not a map cursor")
    return cell, asset_id


def _thumbnail(asset_id: int, version: str | None) -> str | None:
    return None if version is None else f"/api/assets/{asset_id}/thumbnail?v={version}"


@router.get("/api/map", response_model=MapAnswer)
def map_view(
    request: Request,
    bbox: Annotated[
        str,
        Query(
            max_length=200,
            description="west,south,east,north in degrees (west > east: across 180°).",
        ),
    ],
    zoom: Annotated[int, Query(ge=0, le=DEEPEST_ZOOM)],
    cursor: Annotated[str | None, Query(max_length=60, pattern=r"^[0-9]+\.[0-9]+$")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_PAGE)] = 200,
) -> MapAnswer:
    """The assets with a position in a view, clustered on the map's grid: a cluster per
    cell of about 64 pixels at this zoom (its count, centre, bounds and one asset), and
    the cells of one asset as assets. At the deepest zoom, the view's assets themselves,
    ``limit`` at a time (``cursor``: the answer's ``next_cursor``)."""
    box = parse_bbox(bbox)
    found = MapBrowser(api_state(request).library.sessions).view(
        box, zoom, after=_cursor(cursor), limit=limit
    )
    clusters = [
        MapCluster(
            count=c.count,
            lat=c.latitude,
            lon=c.longitude,
            bbox=[c.west, c.south, c.east, c.north],
            asset_id=c.asset_id,
            thumbnail_url=_thumbnail(c.asset_id, c.thumbnail),
        )
        for c in found.clusters
    ]
    points = [
        MapAsset(
            id=p.asset_id,
            lat=p.latitude,
            lon=p.longitude,
            thumbnail_url=_thumbnail(p.asset_id, p.thumbnail),
        )
        for p in found.points
    ]
    after = found.next_cursor
    return MapAnswer(
        zoom=zoom,
        clusters=clusters,
        assets=points,
        next_cursor=None if after is None else f"{after[0]}.{after[1]}",
    )


@router.get("/api/places", response_model=Places)
def places(
    request: Request,
    country: Annotated[str | None, Query(pattern=r"^[A-Za-z]{2}$")] = None,
    region: Annotated[str | None, Query(max_length=200, pattern=PLAIN_TEXT)] = None,
) -> Places:
    """The places of the assets with a position: the countries with their counts; with
    ``country`` (ISO 3166 alpha-2), its regions, and its cities of no known region;
    with ``region`` too, its cities. Each with its level and the bounds of its assets,
    [west, south, east, north]."""
    if region is not None and country is None:
        raise ApiError(422, "invalid_request", "region: needs its country")
    found = MapBrowser(api_state(request).library.sessions).places(country, region)
    return Places(places=[Place(**p) for p in found])
