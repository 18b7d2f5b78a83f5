"""Read-only views of the library for browsing (HTTP API, web UI): pages of assets
with filters and a keyset cursor, one asset with its files and renditions, and the
duplicate groups with the decisions recorded on them."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, exists, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import (
    assets,
    duplicate_decisions,
    files,
    near_duplicates,
    people,
    renditions,
    sources,
)
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.media.places import NULL_ISLAND_DEGREES
from photo_pipeline.pipeline.curation.filters import CurationFilter, curation_fields, with_curation
from photo_pipeline.pipeline.faces.people import with_people, with_person
from photo_pipeline.pipeline.files.paths import display
from photo_pipeline.pipeline.library import filter_paths, live_photos
from photo_pipeline.pipeline.library.catalog import PRESENT, listing_session, type_matches
from photo_pipeline.pipeline.library.catalog.listings import with_first_files
from photo_pipeline.pipeline.library.ordering import BadCursor, Order
from photo_pipeline.pipeline.library.shown import with_shown_fields
from photo_pipeline.pipeline.library.text_filters import camera_matches, place_matches
from photo_pipeline.pipeline.search_index import matching, words
from photo_pipeline.pipeline.xmp.status import sidecar_status

__all__ = ["AssetFilter", "BadCursor", "Browser", "InvalidKeepers", "UnknownGroup"]


class InvalidKeepers(PhotoPipelineError):
    code = "invalid_keepers"
    status = 422


class UnknownGroup(PhotoPipelineError):
    code = "duplicate_group_not_found"
    status = 404


@dataclass(frozen=True)
class AssetFilter:
    taken_from: date | None = None  # capture day, inclusive (local calendar)
    taken_to: date | None = None  # inclusive
    camera: str | None = None  # part of make or model, any case
    has_gps: bool | None = None
    duplicates: str | None = None  # "exact": several files; "near": in a near group
    place: str | None = None  # part of city, region or country
    type: str | None = None  # photo, video or live (catalog.type_matches)
    curation: CurationFilter = field(
        default_factory=CurationFilter
    )  # album, tag, rating, favourite, rejected
    # Search words (pipeline.search_index.words): each a prefix of a word of the asset's
    words: tuple[str, ...] = ()
    person: int | None = None  # a person's id (pipeline.faces.people.find_person)


# Asset and group ids are 64-bit integers in the database.
_MAX_ID = 2**63 - 1
_ID = re.compile(r"[0-9]{1,19}")

_SUMMARY = (
    assets.c.id,
    assets.c.content_hash,
    assets.c.format,
    assets.c.width,
    assets.c.height,
    assets.c.taken_local,
    assets.c.taken_utc,
    assets.c.taken_source,
    assets.c.taken_order,
    assets.c.tz_name,
    assets.c.make,
    assets.c.model,
    assets.c.country,
    assets.c.city,
    assets.c.district,
    assets.c.kind,
    assets.c.duration_seconds,
    assets.c.video_codec,
    assets.c.is_motion_photo,
    live_photos.motion_asset_id().label("motion_asset_id"),
)


def _has_position() -> ColumnElement[bool]:
    """A position the place lookup takes (``media.places.valid_position``): null island
    (0, 0), which phones write without a fix, is none; out-of-range values are dropped
    when read."""
    lat, lon = assets.c.gps_latitude, assets.c.gps_longitude
    null_island = and_(func.abs(lat) < NULL_ISLAND_DEGREES, func.abs(lon) < NULL_ISLAND_DEGREES)
    return and_(lat.is_not(None), lon.is_not(None), ~null_island)


def _has_present_file() -> Any:
    """The asset has a present file: one probe of ix_files_asset_id_state."""
    return exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)


def _present_file_count() -> Any:
    return (
        select(func.count())
        .where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
        .correlate(assets)
        .scalar_subquery()
    )


# Totals: counted exactly up to this many assets (by id span); beyond, estimated from
# _SAMPLES evenly spread id ranges of _SAMPLE_SPAN ids each (a few thousand rows read,
# whatever the library's size).
EXACT_TOTAL_UP_TO = 5_000
_SAMPLES = 10
_SAMPLE_SPAN = 200
# taken_order is the UTC instant of taken_local (an offset of at most a day), so a
# range of capture days is also a range of the listing index, widened by this much.
_OFFSET_MARGIN = timedelta(days=2)


def _rendition_versions(asset_ids: list[int], session: Session) -> dict[int, dict[str, str]]:
    """Each asset's renditions by kind, with the settings fingerprint they were made
    with (a cache-busting version for their URLs)."""
    found: dict[int, dict[str, str]] = {}
    query = select(renditions.c.asset_id, renditions.c.kind, renditions.c.fingerprint).where(
        renditions.c.asset_id.in_(asset_ids)
    )
    for asset_id, kind, fingerprint in session.execute(query):
        found.setdefault(asset_id, {})[kind] = fingerprint
    return found


class Browser:
    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self._session_factory = session_factory

    def asset_page(
        self,
        where: AssetFilter,
        *,
        cursor: str | None = None,
        limit: int = 100,
        sort: str = "taken-utc",
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Assets with at least one present file in the order ``sort`` names
        (``ordering.SORTS``; by default the UTC instant when known), at most
        ``limit``, and the cursor of the next page (or None). Each row carries its
        display fields (``pipeline.library.shown``)."""
        order = Order(sort)
        # Walk the order's index from the cursor and stop after a page: each row
        # costs a probe for a present file, never a count over the whole table.
        query = (
            select(*_SUMMARY, _present_file_count().label("files"))
            .where(_has_present_file())
            .order_by(*order.columns)
            .limit(limit + 1)
        )
        query = _filtered(query, where, sort=sort)
        key = order.decode(cursor) if cursor is not None else None
        with listing_session(self._session_factory) as session:
            if where.words:
                query = query.where(_words_match(session, where.words))
            # A rare filter's own index (filter_paths), else the order's walked.
            paths = filter_paths.branches(
                session, order, camera=where.camera, place=where.place, asset_type=where.type
            )
            if paths is not None:
                found = filter_paths.walk(session, query, order, key, limit + 1, paths)
            else:
                found = list(
                    session.execute(query if key is None else query.where(order.after(key)))
                )
            rows = [dict(r._mapping) for r in found]
            more = len(rows) > limit
            rows = with_curation(session, with_first_files(session, rows[:limit]))
            versions = _rendition_versions([r["id"] for r in rows], session)
        for row in rows:
            row["renditions"] = versions.get(row["id"], {})
        next_cursor = order.encode(rows[-1]) if more else None
        for row in rows:
            del row["taken_order"]
        return [with_shown_fields(row) for row in rows], next_cursor

    def asset_total(self, where: AssetFilter) -> tuple[int, bool]:
        """How many assets ``asset_page`` lists with this filter, and whether that is
        exact: counted up to EXACT_TOTAL_UP_TO assets, estimated from samples beyond
        (so that showing a total never scans a big library)."""
        counted = _filtered(select(func.count()).select_from(assets), where).where(
            _has_present_file()
        )
        with listing_session(self._session_factory) as session:
            # Two statements: SQLite reads min() or max() from the end of the primary
            # key only when the query asks for just one of them.
            lowest = session.scalar(select(func.min(assets.c.id)))
            highest = session.scalar(select(func.max(assets.c.id)))
            if lowest is None:
                return 0, True
            span = highest - lowest + 1
            if span <= EXACT_TOTAL_UP_TO:
                if where.words:
                    counted = counted.where(_words_match(session, where.words))
                return session.scalar(counted) or 0, True
            step = span // _SAMPLES
            found = 0
            for n in range(_SAMPLES):
                start = lowest + n * step
                sample = (start, start + _SAMPLE_SPAN - 1)
                query = counted.where(assets.c.id.between(*sample))
                if where.words:
                    # A known set of matches cut to the sample's ids (a short list).
                    query = query.where(_words_match(session, where.words, within=sample))
                found += session.scalar(query)
        return round(found * span / (_SAMPLES * _SAMPLE_SPAN)), False

    def asset(self, asset_id: int) -> dict[str, Any] | None:
        """Every catalogue fact about one asset, with its files and renditions, the
        display fields (``pipeline.library.shown``) and, for a Live Photo, its
        ``motion`` part: the MOV's asset id, format, size, duration and files."""
        with read_session(self._session_factory) as session:
            row = session.execute(select(assets).where(assets.c.id == asset_id)).one_or_none()
            if row is None:
                return None
            found = dict(row._mapping)
            found.pop("taken_order", None)
            found["motion_asset_id"] = session.scalar(
                select(assets.c.id).where(assets.c.live_of == asset_id).order_by(assets.c.id)
            )
            found["files"] = _files_of(session, asset_id)
            found["renditions"] = {
                r.kind: {
                    "format": r.format,
                    "width": r.width,
                    "height": r.height,
                    "fingerprint": r.fingerprint,
                }
                for r in session.execute(
                    select(renditions).where(renditions.c.asset_id == asset_id)
                )
            }
            found["near_group"] = session.scalar(
                select(near_duplicates.c.group_id).where(near_duplicates.c.asset_id == asset_id)
            )
            found["motion"] = _motion_part(session, found["motion_asset_id"])
            found.update(curation_fields(session, [asset_id])[asset_id])
            found["xmp"] = sidecar_status(session, asset_id)
        return with_shown_fields(found)

    def rendition_versions(self, asset_ids: list[int]) -> dict[int, dict[str, str]]:
        """Each asset's renditions by kind with their settings fingerprint."""
        with read_session(self._session_factory) as session:
            return _rendition_versions(asset_ids, session)

    # ── duplicate decisions ────────────────────────────────────────────────────
    def decisions(self) -> dict[str, dict[str, Any]]:
        with read_session(self._session_factory) as session:
            return {
                r.group_key: {"keep": r.keep, "decided_at": r.decided_at}
                for r in session.execute(select(duplicate_decisions))
            }

    @transactional
    def decide(self, group_key: str, keep: list[str]) -> dict[str, Any]:
        """Record which members of a duplicate group to keep (nothing is deleted):
        ``exact:<asset id>`` keeps file paths, ``near:<group id>`` keeps asset ids."""
        kind, _, raw_id = group_key.partition(":")
        # ASCII digits within the ids' 64-bit range: "²" and 10**30 name no group.
        if kind not in ("exact", "near") or not _ID.fullmatch(raw_id) or int(raw_id) > _MAX_ID:
            raise UnknownGroup("duplicate_group_not_found", f"no duplicate group {group_key!r}")
        now = utc_now()
        with write_session(self._session_factory) as session:
            members = self._members(session, kind, int(raw_id))
            if len(members) < 2:
                raise UnknownGroup("duplicate_group_not_found", f"no duplicate group {group_key!r}")
            unknown = sorted(set(keep) - members)
            if unknown or not keep:
                raise InvalidKeepers(
                    "invalid_keepers",
                    f"keep must name members of {group_key}; not members: {unknown}"
                    if unknown
                    else "keep at least one member",
                )
            session.execute(
                duplicate_decisions.delete().where(duplicate_decisions.c.group_key == group_key)
            )
            session.execute(
                duplicate_decisions.insert().values(
                    group_key=group_key, keep=sorted(keep), decided_at=now
                )
            )
        return {"group": group_key, "keep": sorted(keep), "decided_at": now}

    @staticmethod
    def _members(session: Session, kind: str, group_id: int) -> set[str]:
        if kind == "near":
            query = select(near_duplicates.c.asset_id).where(near_duplicates.c.group_id == group_id)
            return {str(a) for a in session.scalars(query)}
        query = (
            select(sources.c.path, files.c.path)
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id == group_id, files.c.state == PRESENT)
        )
        return {f"{source}/{display(path)}" for source, path in session.execute(query)}


def _files_of(session: Session, asset_id: int) -> list[dict[str, Any]]:
    """An asset's files: folder, path in it (as shown), size and state."""
    return [
        {"source": f.source_path, "path": display(f.path), "size": f.size, "state": f.state}
        for f in session.execute(
            select(files.c.path, files.c.size, files.c.state, sources.c.path.label("source_path"))
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id == asset_id)
            .order_by(sources.c.path, files.c.path)
        )
    ]


def _motion_part(session: Session, motion_id: int | None) -> dict[str, Any] | None:
    """A Live Photo's motion part (its MOV), as its detail names it; None without."""
    if motion_id is None:
        return None
    motion = session.execute(
        select(
            assets.c.id,
            assets.c.format,
            assets.c.mime,
            assets.c.size,
            assets.c.duration_seconds,
            assets.c.video_codec,
            assets.c.width,
            assets.c.height,
        ).where(assets.c.id == motion_id)
    ).one()
    return {
        "asset_id": motion.id,
        "format": motion.format,
        "mime": motion.mime,
        "size": motion.size,
        "duration": motion.duration_seconds,
        "video_codec": motion.video_codec,
        "width": motion.width,
        "height": motion.height,
        "files": _files_of(session, motion.id),
    }


def _filtered(
    query: Select[*tuple[Any, ...]], where: AssetFilter, *, sort: str = "taken-utc"
) -> Select[*tuple[Any, ...]]:
    # A Live Photo's motion part is shown by its still, never on its own.
    query = query.where(live_photos.shown())
    if where.type is not None:
        query = query.where(type_matches(where.type))
    if sort in ("taken", "taken-desc"):
        # Sorted by the wall clock: the days are a range of the order's own index.
        if where.taken_from is not None:
            query = query.where(assets.c.taken_local >= where.taken_from.isoformat())
        if where.taken_to is not None and where.taken_to < date.max:
            end = where.taken_to + timedelta(days=1)
            query = query.where(assets.c.taken_local < end.isoformat())
        return _filtered_but_dates(query, where)
    # The taken_order bounds choose the index (a range of the listing's own order);
    # taken_local, wrapped so that no planner picks its index and sorts every match
    # of a long range, is only checked.
    local = func.coalesce(assets.c.taken_local, "")
    if where.taken_from is not None:
        query = query.where(local >= where.taken_from.isoformat())
        start = datetime.combine(where.taken_from, time(), UTC)
        if start > datetime.min.replace(tzinfo=UTC) + _OFFSET_MARGIN:
            query = query.where(assets.c.taken_order >= start - _OFFSET_MARGIN)
    if where.taken_to is not None and where.taken_to < date.max:  # date.max: no upper bound
        end = where.taken_to + timedelta(days=1)
        query = query.where(local < end.isoformat())
        if end < date.max - _OFFSET_MARGIN:
            query = query.where(
                assets.c.taken_order < datetime.combine(end, time(), UTC) + _OFFSET_MARGIN
            )
    return _filtered_but_dates(query, where)


def people_named(session: Session, word: str) -> list[int]:
    """The people a search word names: a prefix of a word of their name (few rows:
    people, not faces)."""
    named = session.execute(select(people.c.id, people.c.name).where(people.c.name.is_not(None)))
    return [row.id for row in named if any(part.startswith(word) for part in words(row.name))]


def _words_match(
    session: Session, search_words: tuple[str, ...], within: tuple[int, int] | None = None
) -> ColumnElement[bool]:
    """Each search word a prefix of a word of the asset's document, or of the name of a
    person whose face is in it ("ann" finds the photos of Ann Lee)."""
    plain: list[str] = []
    conditions: list[ColumnElement[bool]] = []
    for word in search_words:
        named = people_named(session, word)
        if named:
            conditions.append(or_(matching(session, [word], within=within), with_people(named)))
        else:
            plain.append(word)
    if plain:
        conditions.append(matching(session, plain, within=within))
    return and_(*conditions)


def listed(
    query: Select[*tuple[Any, ...]], where: AssetFilter, session: Session
) -> Select[*tuple[Any, ...]]:
    """``query`` narrowed to the assets the listing shows with ``where`` (its filters,
    search words and a present file), its date range read on the local wall clock (a
    range of ``ix_assets_taken_local_id``)."""
    query = _filtered(query, where, sort="taken").where(_has_present_file())
    if where.words:
        query = query.where(_words_match(session, where.words))
    return query


def _filtered_but_dates(
    query: Select[*tuple[Any, ...]], where: AssetFilter
) -> Select[*tuple[Any, ...]]:
    for condition in where.curation.conditions():
        query = query.where(condition)
    if where.person is not None:
        query = query.where(with_person(where.person))
    if where.camera:
        query = query.where(camera_matches(where.camera))
    if where.place:
        query = query.where(place_matches(where.place))
    if where.has_gps is True:
        query = query.where(_has_position())
    elif where.has_gps is False:
        query = query.where(~_has_position())
    if where.duplicates == "exact":
        query = query.where(_present_file_count() > 1)
    elif where.duplicates == "near":
        others = near_duplicates.alias("others")
        # A scalar subquery, not EXISTS: PostgreSQL would turn EXISTS into a join that
        # reads every group member and sorts them, where a page needs a short walk of
        # the listing index with a probe per asset.
        in_a_group = (
            select(near_duplicates.c.group_id)
            .where(
                near_duplicates.c.asset_id == assets.c.id,
                # A group of one is not a group: another member must exist.
                exists().where(
                    others.c.group_id == near_duplicates.c.group_id,
                    others.c.asset_id != near_duplicates.c.asset_id,
                ),
            )
            .correlate(assets)
            .limit(1)
            .scalar_subquery()
        )
        query = query.where(in_a_group.is_not(None))
    return query


def encode_group_cursor(kind: str, after: int) -> str:
    """The cursor of the next page of ``kind`` duplicate groups (after this id)."""
    raw = json.dumps([kind, after]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_group_cursor(cursor: str) -> tuple[str, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        kind, after = json.loads(raw)
        if kind not in ("exact", "near") or type(after) is not int or not 0 <= after <= _MAX_ID:
            raise ValueError
        return kind, after
    except (ValueError, TypeError, UnicodeDecodeError):
        raise BadCursor("invalid_cursor", "cursor is not one this server gave out") from None
