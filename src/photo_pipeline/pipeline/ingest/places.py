"""Time zones and places in the catalogue: filled by the scan as it records photos,
and by the ``places`` backfill job for assets catalogued before (tz_source NULL).
With ``refresh``, the job works out the places of every asset with a position again
(not its time): a library catalogued before the gazetteer named cities as people do
(Berlin rather than Mitte, with Mitte as the district) gets the new names."""

from __future__ import annotations

import dataclasses
from datetime import datetime

from sqlalchemy import ColumnElement, Update, bindparam, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import changed_rows, read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.media.capture_time import CaptureTime
from photo_pipeline.media.places import (
    Place,
    ZoneAndPlace,
    locate_many,
    places_at,
    valid_position,
    warm_up_in_background,
    zone_at,
)
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.library.catalog import FileReport

JOB_TYPE = "places"
LOCK = "places"  # one backfill at a time; it never races timeshift (see _store)
_DISCOVER_CHUNK = 1000


def locate_reports(reports: list[FileReport]) -> list[FileReport]:
    """The reports with the zone and place of each photo filled in (``located``), in
    one batch of lookups; runs in the worker process as the scan records a batch."""
    readable = [i for i, r in enumerate(reports) if r.metadata is not None and not r.error]
    if not readable:
        return reports
    found = locate_many(
        [
            (md.taken, md.gps_latitude, md.gps_longitude)
            for md in (reports[i].metadata for i in readable)
            if md is not None
        ]
    )
    located = list(reports)
    for i, where in zip(readable, found, strict=True):
        located[i] = dataclasses.replace(reports[i], located=where)
    return located


def prepare(report: FileReport) -> None:
    """Called as each inspected file comes back: the first photo with a position
    starts loading the place data, so the batch's lookups need not wait for it."""
    md = report.metadata
    if md is not None and valid_position(md.gps_latitude, md.gps_longitude) is not None:
        warm_up_in_background()


def start_backfill(
    service: JobService, *, refresh: bool = False, idempotency_key: str | None = None
) -> Enqueued:
    """Queue the ``places`` job (or return the one already queued or running, not
    ``created``); ``refresh``: the places of every asset with a position, not only
    unresolved ones. A replay of ``idempotency_key`` returns its job."""
    params = {"refresh": True} if refresh else {}
    replayed = service.replay(idempotency_key, JOB_TYPE, params)
    if replayed is not None:
        return replayed
    return service.submit_or_join(
        JOB_TYPE,
        lock=LOCK,
        params=params,
        idempotency_key=idempotency_key,
        # The backfill already queued or running stands for this one, whatever it was
        # asked (only backfills take this lock).
        joins=lambda _held: True,
    )


def unresolved_asset_ids(session_factory: sessionmaker[Session]) -> list[int]:
    """Assets whose zone and place were never worked out."""
    with read_session(session_factory) as session:
        return list(
            session.scalars(
                select(assets.c.id).where(assets.c.tz_source.is_(None)).order_by(assets.c.id)
            )
        )


def positioned_asset_ids(session_factory: sessionmaker[Session]) -> list[int]:
    """Assets with a GPS position (maybe not a valid one: the lookup decides)."""
    with read_session(session_factory) as session:
        return list(
            session.scalars(
                select(assets.c.id)
                .where(assets.c.gps_latitude.is_not(None), assets.c.gps_longitude.is_not(None))
                .order_by(assets.c.id)
            )
        )


@registry.handler(JOB_TYPE)
def backfill(ctx: JobContext) -> None:
    """Items are asset ids; each batch is looked up and written just before its items
    are reported done, so a crash redoes at most one batch (harmlessly)."""
    refresh = bool(ctx.params.get("refresh"))
    wanted = (positioned_asset_ids if refresh else unresolved_asset_ids)(ctx.session_factory)
    keys = [str(asset_id) for asset_id in wanted]
    for start in range(0, len(keys), _DISCOVER_CHUNK):
        ctx.add_items(keys[start : start + _DISCOVER_CHUNK])
    pending: list[int] = []
    write = refresh_places if refresh else resolve_assets

    def store() -> None:
        if pending:
            write(ctx.session_factory, pending)
            pending.clear()

    ctx.before_flush(store)
    for key in ctx.items():
        pending.append(int(key))
        ctx.succeed(key)


@transactional
def resolve_assets(session_factory: sessionmaker[Session], asset_ids: list[int]) -> int:
    """Work out and store zone and place of these assets (those still unresolved);
    returns how many were written."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(
                assets.c.id,
                assets.c.taken_local,
                assets.c.taken_offset_minutes,
                assets.c.taken_source,
                assets.c.gps_latitude,
                assets.c.gps_longitude,
            ).where(assets.c.id.in_(asset_ids), assets.c.tz_source.is_(None))
        ).all()
    if not rows:
        return 0
    found = locate_many(
        [
            (
                CaptureTime(
                    datetime.fromisoformat(row.taken_local),
                    row.taken_offset_minutes,
                    row.taken_source,
                ),
                row.gps_latitude,
                row.gps_longitude,
            )
            for row in rows
        ]
    )
    with write_session(session_factory) as session:
        changed = _store(session, [(row.id, row.taken_local) for row in rows], found)
        search_index.refresh(session, [row.id for row in rows])  # places are search words
        return changed


def _store(session: Session, seen: list[tuple[int, str]], found: list[ZoneAndPlace]) -> int:
    # Conditional on the wall clock read above: a timeshift that moved the asset in
    # between wins, and the asset stays unresolved for the next backfill.
    statement = _update_assets(
        _ZONE_COLUMNS + _PLACE_COLUMNS,
        assets.c.tz_source.is_(None),
        assets.c.taken_local == bindparam("seen_local"),
    )
    rows = [
        {
            "asset_id": asset_id,
            "seen_local": local,
            "new_taken_local": where.zone.local.isoformat(),
            "new_taken_offset_minutes": where.zone.offset_minutes,
            "new_taken_utc": where.zone.utc,
            "new_taken_order": where.zone.order,
            "new_tz_name": where.zone.tz_name,
            "new_tz_source": where.zone.tz_source,
            **_new_place(where.place),
        }
        for (asset_id, local), where in zip(seen, found, strict=True)
    ]
    return changed_rows(session, statement, rows)


@transactional
def refresh_places(session_factory: sessionmaker[Session], asset_ids: list[int]) -> int:
    """Work out and store the place (country, region, city, district) of these assets
    from their positions; their times stay as they are. Returns how many changed."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(assets.c.id, assets.c.gps_latitude, assets.c.gps_longitude).where(
                assets.c.id.in_(asset_ids)
            )
        ).all()
    positions = [valid_position(row.gps_latitude, row.gps_longitude) for row in rows]
    zones = [zone_at(*p) if p is not None else None for p in positions]
    found = places_at(positions, zones)
    statement = _update_assets(_PLACE_COLUMNS)
    values = [
        {"asset_id": row.id, **_new_place(place)} for row, place in zip(rows, found, strict=True)
    ]
    if not values:
        return 0
    with write_session(session_factory) as session:
        changed = changed_rows(session, statement, values)
        search_index.refresh(session, [row.id for row in rows])  # places are search words
        return changed


# What the backfill writes of an asset: its capture time in its zone, and its place.
_ZONE_COLUMNS = (
    "taken_local",
    "taken_offset_minutes",
    "taken_utc",
    "taken_order",
    "tz_name",
    "tz_source",
)
_PLACE_COLUMNS = tuple(field.name for field in dataclasses.fields(Place))


def _update_assets(columns: tuple[str, ...], *where: ColumnElement[bool]) -> Update:
    """The UPDATE of ``columns`` of the asset with a row's ``asset_id`` (and ``where``)
    to the row's ``new_<column>`` (a bind may not take its column's name in SET), for
    many rows at once."""
    return (
        update(assets)
        .where(assets.c.id == bindparam("asset_id"), *where)
        .values({column: bindparam(f"new_{column}") for column in columns})
    )


def _new_place(place: Place | None) -> dict[str, str | None]:
    """A row's ``new_<column>`` of the place columns (all None: no place there)."""
    return {f"new_{name}": getattr(place, name) if place else None for name in _PLACE_COLUMNS}
