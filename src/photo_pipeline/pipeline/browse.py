"""Read-only views of the library for browsing (HTTP API, web UI): pages of assets
with filters and a keyset cursor, one asset with its files and renditions, and the
duplicate groups with the decisions recorded on them."""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any

from sqlalchemy import Select, and_, exists, func, or_, select, tuple_
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import (
    assets,
    duplicate_decisions,
    files,
    near_duplicates,
    renditions,
    sources,
)
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.pipeline.catalog import PRESENT
from photo_pipeline.pipeline.paths import display


class BadCursor(PhotoPipelineError):
    code = "invalid_cursor"
    status = 422


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
)


def _present_files() -> Any:
    return (
        select(files.c.asset_id, func.count().label("files"))
        .where(files.c.state == PRESENT, files.c.asset_id.is_not(None))
        .group_by(files.c.asset_id)
        .subquery("present")
    )


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
        self, where: AssetFilter, *, cursor: str | None = None, limit: int = 100
    ) -> tuple[list[dict[str, Any]], str | None]:
        """Assets with at least one present file in capture order (the UTC instant
        when known), at most ``limit``, and the cursor of the next page (or None)."""
        present = _present_files()
        query = (
            select(*_SUMMARY, present.c.files)
            .join(present, present.c.asset_id == assets.c.id)
            .order_by(assets.c.taken_order, assets.c.id)
            .limit(limit + 1)
        )
        query = _filtered(query, where, present)
        if cursor is not None:
            order, asset_id = _decode_cursor(cursor)
            query = query.where(tuple_(assets.c.taken_order, assets.c.id) > (order, asset_id))
        with read_session(self._session_factory) as session:
            rows = [dict(r._mapping) for r in session.execute(query)]
            versions = _rendition_versions([r["id"] for r in rows[:limit]], session)
        more = len(rows) > limit
        rows = rows[:limit]
        for row in rows:
            row["renditions"] = versions.get(row["id"], {})
        next_cursor = _encode_cursor(rows[-1]) if more else None
        for row in rows:
            del row["taken_order"]
        return rows, next_cursor

    def asset(self, asset_id: int) -> dict[str, Any] | None:
        """Every catalogue fact about one asset, with its files and renditions."""
        with read_session(self._session_factory) as session:
            row = session.execute(select(assets).where(assets.c.id == asset_id)).one_or_none()
            if row is None:
                return None
            found = dict(row._mapping)
            found.pop("taken_order", None)
            found["files"] = [
                {"source": f.source_path, "path": display(f.path), "state": f.state}
                for f in session.execute(
                    select(files.c.path, files.c.state, sources.c.path.label("source_path"))
                    .join(sources, sources.c.id == files.c.source_id)
                    .where(files.c.asset_id == asset_id)
                    .order_by(sources.c.path, files.c.path)
                )
            ]
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
        return found

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


def _filtered(query: Select[Any], where: AssetFilter, present: Any) -> Select[Any]:
    if where.taken_from is not None:
        query = query.where(assets.c.taken_local >= where.taken_from.isoformat())
    if where.taken_to is not None and where.taken_to < date.max:  # date.max: no upper bound
        query = query.where(assets.c.taken_local < (where.taken_to + timedelta(days=1)).isoformat())
    if where.camera:
        pattern = f"%{where.camera.lower()}%"
        query = query.where(
            or_(func.lower(assets.c.make).like(pattern), func.lower(assets.c.model).like(pattern))
        )
    if where.place:
        pattern = f"%{where.place.lower()}%"
        query = query.where(
            or_(
                func.lower(assets.c.city).like(pattern),
                func.lower(assets.c.region).like(pattern),
                func.lower(assets.c.country).like(pattern),
                func.lower(assets.c.country_code) == where.place.lower(),
            )
        )
    if where.has_gps is True:
        query = query.where(assets.c.gps_latitude.is_not(None))
    elif where.has_gps is False:
        query = query.where(assets.c.gps_latitude.is_(None))
    if where.duplicates == "exact":
        query = query.where(present.c.files > 1)
    elif where.duplicates == "near":
        query = query.where(
            exists().where(
                and_(
                    near_duplicates.c.asset_id == assets.c.id,
                    # A group of one is not a group.
                    near_duplicates.c.group_id.in_(
                        select(near_duplicates.c.group_id)
                        .group_by(near_duplicates.c.group_id)
                        .having(func.count() > 1)
                    ),
                )
            )
        )
    return query


def _encode_cursor(row: dict[str, Any]) -> str:
    order = row["taken_order"]
    raw = json.dumps([order.isoformat() if order else None, row["id"]]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _decode_cursor(cursor: str) -> tuple[datetime, int]:
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4))
        order, asset_id = json.loads(raw)
        when = datetime.fromisoformat(order)
        if when.tzinfo is None or type(asset_id) is not int or not 0 <= asset_id <= _MAX_ID:
            raise ValueError
        return when, asset_id
    except (ValueError, TypeError, UnicodeDecodeError):
        raise BadCursor("invalid_cursor", "cursor is not one this server gave out") from None
