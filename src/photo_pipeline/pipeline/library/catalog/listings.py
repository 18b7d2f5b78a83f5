"""Reading the catalogue for listings: assets with filters, files, exact duplicates;
each a bounded read per page, whatever the library's size."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy import exists, func, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import assets, files, sources
from photo_pipeline.pipeline.curation.filters import CurationFilter, with_curation
from photo_pipeline.pipeline.file_states import PRESENT
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.library import live_photos
from photo_pipeline.pipeline.library.ordering import Order
from photo_pipeline.pipeline.library.shown import with_shown_fields

ASSET_TYPES = ("photo", "video", "live")


def type_matches(asset_type: str) -> Any:
    """The SQL condition of ``assets(type=...)``: photo, video, or live (a Live Photo
    with its motion part, or a Motion Photo)."""
    if asset_type == "live":
        motion = assets.alias("motion")
        return assets.c.is_motion_photo.is_(True) | exists().where(motion.c.live_of == assets.c.id)
    if asset_type in ("photo", "video"):
        return assets.c.kind == asset_type
    raise ValueError(f"type must be one of {', '.join(ASSET_TYPES)}, got {asset_type!r}")


def place_matches(text: str) -> Any:
    """The SQL condition of ``assets(place=text)``."""
    needle = text.strip().lower()
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return or_(
        func.lower(assets.c.country_code) == needle,
        *(
            func.lower(column).like(pattern, escape="\\")
            for column in (assets.c.country, assets.c.region, assets.c.city, assets.c.district)
        ),
    )


@contextmanager
def listing_session(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A read session for one page of a listing. PostgreSQL's JIT would compile the
    plan of a page whose estimated cost (a walk of a whole index) passes
    jit_above_cost: 80 ms of compiling for a page read in 3 ms."""
    with read_session(factory) as session:
        if is_postgresql(session):
            session.execute(text("SET LOCAL jit = off"))
        yield session


def iter_assets(
    factory: sessionmaker[Session],
    *,
    since: str | None = None,
    camera: str | None = None,
    place: str | None = None,
    type: str | None = None,
    limit: int | None = None,
    page_size: int = 1000,
    sort: str = "taken-utc",
    curation: CurationFilter | None = None,
    person: int | None = None,
) -> Iterator[dict[str, Any]]:
    """``assets`` one keyset page at a time (a bounded read per page, whatever
    the library's size), in the order ``sort`` names (``library.ordering``), each row
    with its display fields, first file (``library.shown``) and curation fields
    (``curation.filters``), filtered by ``curation`` too."""
    order = Order(sort)
    present_files = (
        select(func.count())
        .where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
        .correlate(assets)
        .scalar_subquery()
    )
    query = (
        select(
            assets,
            present_files.label("files"),
            live_photos.motion_asset_id().label("motion_asset_id"),
        )
        .where(exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT))
        .where(live_photos.shown())
        .order_by(*order.columns)
    )
    if type is not None:
        query = query.where(type_matches(type))
    for condition in (curation or CurationFilter()).conditions():
        query = query.where(condition)
    if place:
        query = query.where(place_matches(place))
    if person is not None:
        from photo_pipeline.pipeline.faces.people import with_person

        query = query.where(with_person(person))
    if since:
        query = query.where(assets.c.taken_local >= since)
    if camera:
        pattern = f"%{camera.lower()}%"
        query = query.where(
            or_(
                func.lower(assets.c.make).like(pattern),
                func.lower(assets.c.model).like(pattern),
            )
        )
    left = limit
    after: tuple[Any, ...] | None = None
    while left is None or left > 0:
        page = query.limit(page_size if left is None else min(page_size, left))
        if after is not None:
            page = page.where(order.after(after))
        with listing_session(factory) as session:
            rows = with_first_files(session, [dict(row._mapping) for row in session.execute(page)])
            rows = with_curation(session, rows)
        yield from (with_shown_fields(row) for row in rows)
        if len(rows) < page_size or not rows:
            return
        if left is not None:
            left -= len(rows)
        after = order.key(rows[-1])


def list_files(
    factory: sessionmaker[Session], *, states: Iterable[str] | None = None
) -> list[dict[str, Any]]:
    query = (
        select(files, sources.c.path.label("source_path"))
        .join(sources, sources.c.id == files.c.source_id)
        .order_by(files.c.source_id, files.c.path)
    )
    if states is not None:
        query = query.where(files.c.state.in_(list(states)))
    with read_session(factory) as session:
        return [dict(row._mapping) for row in session.execute(query)]


def duplicate_page(
    factory: sessionmaker[Session], *, after: int = 0, limit: int = 100
) -> tuple[list[dict[str, Any]], int | None]:
    """At most ``limit`` exact-duplicate groups of assets with an id above
    ``after``, by asset id, and the ``after`` of the next page (None at the end).
    The groups are found by walking ix_files_asset_id_state from ``after``."""
    shared = (
        select(files.c.asset_id)
        .where(files.c.asset_id > after, files.c.state == PRESENT)
        .group_by(files.c.asset_id)
        .having(func.count() > 1)
        .order_by(files.c.asset_id)
        .limit(limit + 1)
    )
    with listing_session(factory) as session:
        ids = list(session.scalars(shared))
        more = len(ids) > limit
        ids = ids[:limit]
        rows = session.execute(
            select(
                assets.c.id,
                assets.c.content_hash,
                assets.c.size,
                files.c.path,
                sources.c.path.label("source_path"),
            )
            .join(files, files.c.asset_id == assets.c.id)
            .join(sources, sources.c.id == files.c.source_id)
            .where(assets.c.id.in_(ids), files.c.state == PRESENT)
            .order_by(assets.c.id, sources.c.path, files.c.path)
        ).all()
    groups: dict[int, dict[str, Any]] = {}
    for row in rows:
        group = groups.setdefault(
            row.id,
            {
                "asset_id": row.id,
                "content_hash": row.content_hash,
                "size": row.size,
                "files": [],
            },
        )
        # The path as every listing shows it (paths.display: bytes that are not UTF-8 as
        # \x escapes), which is also how a decision names a member.
        group["files"].append({"source": row.source_path, "path": paths.display(row.path)})
    return list(groups.values()), (ids[-1] if more else None)


_ID_CHUNK = 500


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
                shown = paths.display(path)
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
