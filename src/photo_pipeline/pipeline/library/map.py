"""The map's views: clusters of the assets in a view, the assets themselves at the
deepest zoom (in pages), and the places (countries, regions, cities) with counts.

A view at zoom ``z`` groups on the cells of level ``z + 2`` of :mod:`.map_grid`. Up to
``SUMMARY_LEVELS`` the groups are rows of ``map_cells`` (a few hundred for any view,
whatever the library's size); deeper, they are counted from ``assets`` over the few
ranges of ``ix_assets_map_cell_id`` that cover the view (such a view holds few assets).
Either way a cluster counts every asset of its cell, and the view holds the cells it
touches. A cell of one asset is that asset, not a cluster.

``map_cells`` is kept by triggers on ``assets``, so every writer keeps it: on SQLite
row triggers (migration 0025), on PostgreSQL statement triggers with transition tables
(0028: a statement's positions summed per cell and applied in one upsert, so a bulk
load is one summary write). Writers still queue on the cells they share, the level-0
row first, until their commits.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    delete,
    func,
    insert,
    literal_column,
    or_,
    select,
    tuple_,
)
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, map_cells, renditions
from photo_pipeline.pipeline.library import places
from photo_pipeline.pipeline.library.map_grid import (
    SUMMARY_LEVELS,
    Box,
    Cover,
    cover,
    level_for_zoom,
    shift,
)

DEEPEST_ZOOM = 18  # the view lists its assets, in pages, instead of clustering them
MAX_PAGE = 500


@dataclass(frozen=True)
class Cluster:
    count: int
    latitude: float
    longitude: float
    south: float
    west: float
    north: float
    east: float
    asset_id: int  # one of its assets: the cluster's thumbnail
    thumbnail: str | None = None  # its version (the renditions' fingerprint), or None


@dataclass(frozen=True)
class Point:
    asset_id: int
    latitude: float
    longitude: float
    thumbnail: str | None  # the thumbnail's version (renditions' fingerprint), or None


@dataclass(frozen=True)
class MapView:
    zoom: int
    level: int
    clusters: list[Cluster]
    points: list[Point]
    next_cursor: tuple[int, int] | None  # (map_cell, id) after the page's last point


def _not_motion() -> ColumnElement[bool]:
    """Not a Live Photo's motion half. Not ``live_of IS NULL``: SQLite would read every
    asset through ix_assets_live_of for it rather than a range of the map's index."""
    return func.coalesce(assets.c.live_of, 0) == 0  # ids start at 1


def _in_box(box: Box) -> ColumnElement[bool]:
    lat, lon = assets.c.gps_latitude, assets.c.gps_longitude
    return and_(
        lat.between(box.south, box.north),
        or_(*(lon.between(west, east) for west, east in box.spans())),
    )


def summary_query(level: int, lo: int, hi: int) -> Select[Any]:
    """The rows of ``map_cells`` of ``level`` in one range of its codes: a range of its
    primary key (one range per query, as :func:`counted_query`)."""
    return select(map_cells).where(map_cells.c.level == level, map_cells.c.cell.between(lo, hi))


def _cell_of(level: int) -> Any:
    # An inline constant: PostgreSQL has no bigint >> bigint, which a bound int would be.
    return assets.c.map_cell.op(">>")(literal_column(str(shift(level)))).label("cell")


def counted_query(level: int, lo: int, hi: int) -> Select[Any]:
    """The cells of ``level`` among the assets of one range of full codes, counted
    (deeper than the summary): a range of ``ix_assets_map_cell_id``. One range per
    query, not an OR of them, so that each is a range scan on both databases."""
    cell = _cell_of(level)
    return (
        select(
            cell,
            func.count().label("count"),
            func.sum(assets.c.gps_latitude).label("lat_sum"),
            func.sum(assets.c.gps_longitude).label("lon_sum"),
            func.min(assets.c.gps_latitude).label("south"),
            func.max(assets.c.gps_latitude).label("north"),
            func.min(assets.c.gps_longitude).label("west"),
            func.max(assets.c.gps_longitude).label("east"),
            func.min(assets.c.id).label("asset_id"),
        )
        .where(_not_motion(), assets.c.map_cell.between(lo, hi))
        .group_by(cell)
    )


def _first_asset(session: Session, level: int, cell: int) -> int | None:
    """One asset of a cell: the first of its range of the index (a summary row whose
    sample left it within the statement that changed it: migration 0025)."""
    s = shift(level)
    return session.scalar(
        select(assets.c.id)
        .where(_not_motion(), assets.c.map_cell.between(cell << s, ((cell + 1) << s) - 1))
        .order_by(assets.c.map_cell, assets.c.id)
        .limit(1)
    )


def points_query(
    lo: int, hi: int, box: Box, after: tuple[int, int] | None, limit: int
) -> Select[Any]:
    """The assets of one range of full codes inside ``box``, in index order after
    ``after``: a range of ``ix_assets_map_cell_id``."""
    query = select(
        assets.c.id, assets.c.map_cell, assets.c.gps_latitude, assets.c.gps_longitude
    ).where(_not_motion(), assets.c.map_cell.between(lo, hi), _in_box(box))
    if after is not None:
        query = query.where(tuple_(assets.c.map_cell, assets.c.id) > tuple_(*after))
    return query.order_by(assets.c.map_cell, assets.c.id).limit(limit)


def _thumbnails(session: Session, ids: list[int]) -> dict[int, str]:
    """The thumbnail versions of these assets (those rendered)."""
    if not ids:
        return {}
    query = select(renditions.c.asset_id, renditions.c.fingerprint).where(
        renditions.c.asset_id.in_(ids), renditions.c.kind == "thumbnail"
    )
    return {asset_id: version for asset_id, version in session.execute(query)}


class MapBrowser:
    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions

    def view(
        self,
        box: Box,
        zoom: int,
        *,
        after: tuple[int, int] | None = None,
        limit: int = 200,
    ) -> MapView:
        level = level_for_zoom(zoom)
        with read_session(self.sessions) as session:
            if zoom >= DEEPEST_ZOOM:
                # The ranges of a cover at a coarser level: fewer of them, same assets.
                view = cover(box, level_for_zoom(DEEPEST_ZOOM - 2))
                rows: list[Any] = []
                for lo, hi in view.full_ranges():
                    if after is not None and hi < after[0]:
                        continue  # a range before the cursor's
                    query = points_query(lo, hi, box, after, limit + 1 - len(rows))
                    rows += session.execute(query).all()
                    if len(rows) > limit:
                        break
                more = len(rows) > limit
                rows = rows[:limit]
                found = [(r.id, r.gps_latitude, r.gps_longitude) for r in rows]
                last = (rows[-1].map_cell, rows[-1].id) if more else None
                return MapView(zoom, level, [], self._points(session, found), last)
            view = cover(box, level)
            clusters, singles = self._clusters(session, view)
            versions = _thumbnails(session, [c.asset_id for c in clusters])
            clusters = [replace(c, thumbnail=versions.get(c.asset_id)) for c in clusters]
            return MapView(zoom, level, clusters, self._points(session, singles), None)

    def _clusters(
        self, session: Session, view: Cover
    ) -> tuple[list[Cluster], list[tuple[int, float, float]]]:
        summary = view.level <= SUMMARY_LEVELS
        if summary:
            found = [
                row
                for lo, hi in view.ranges
                for row in session.execute(summary_query(view.level, lo, hi))
            ]
        else:
            found = [
                row
                for lo, hi in view.full_ranges()
                for row in session.execute(counted_query(view.level, lo, hi))
            ]
        clusters: list[Cluster] = []
        singles: list[tuple[int, float, float]] = []
        for row in found:
            count: int = row._mapping["count"]
            if not view.holds(row.cell):
                continue  # a cell of the cover outside the view
            lat, lon = row.lat_sum / count, row.lon_sum / count
            asset_id = (
                (row.sample_id or _first_asset(session, view.level, row.cell))
                if summary
                else row.asset_id
            )
            if asset_id is None:
                continue  # emptied meanwhile
            if count == 1:
                singles.append((asset_id, lat, lon))
                continue
            clusters.append(
                Cluster(count, lat, lon, row.south, row.west, row.north, row.east, asset_id)
            )
        clusters.sort(key=lambda c: -c.count)
        return clusters, singles

    def _points(self, session: Session, found: list[tuple[int, float, float]]) -> list[Point]:
        versions = _thumbnails(session, [asset_id for asset_id, _, _ in found])
        return [Point(i, lat, lon, versions.get(i)) for i, lat, lon in found]

    def places(self, country: str | None = None, region: str | None = None) -> list[dict[str, Any]]:
        """The places beside the map, from their summary (:mod:`.places`)."""
        with read_session(self.sessions) as session:
            return places.places(session, country, region)


def rebuild_map_cells(session: Session) -> None:
    """``map_cells`` counted afresh from the assets, in the caller's transaction (after a
    bulk load made with the triggers off, or to tighten bounds): each cell's sample is
    its lowest id, as the insert triggers give when ids are added in order."""
    session.execute(delete(map_cells))
    for level in range(SUMMARY_LEVELS + 1):
        cell = _cell_of(level)
        session.execute(
            insert(map_cells).from_select(
                ["level", "cell", "count", "lat_sum", "lon_sum", "south", "north", "west",
                 "east", "sample_id"],
                select(
                    literal_column(str(level)),
                    cell,
                    func.count(),
                    func.sum(assets.c.gps_latitude),
                    func.sum(assets.c.gps_longitude),
                    func.min(assets.c.gps_latitude),
                    func.max(assets.c.gps_latitude),
                    func.min(assets.c.gps_longitude),
                    func.max(assets.c.gps_longitude),
                    func.min(assets.c.id),
                )
                .where(assets.c.map_cell.is_not(None), assets.c.live_of.is_(None))
                .group_by(cell),
            )
        )  # fmt: skip
