"""The ``similar`` job: perceptual hashes and groups of near duplicates.

The render job already stores each asset's pHash (of its thumbnail, while it has it in
memory); this job hashes the stored thumbnails of any asset still without one (items),
then groups the library's hashes within ``max_distance`` bits (media.phash, without
comparing every pair) and replaces the ``near_duplicates`` rows in one transaction.

For the API: :func:`near_duplicate_groups` returns the groups as plain dicts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, near_duplicates, renditions, sources
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.media import phash
from photo_pipeline.pipeline.catalog import PRESENT

JOB_TYPE = "similar"
DEFAULT_MAX_DISTANCE = 12
_ADD_CHUNK = 1000
_INSERT_CHUNK = 1000


def enqueue_similar(
    service: JobService,
    home: Path,
    *,
    max_distance: int = DEFAULT_MAX_DISTANCE,
    prerequisites: list[str] | tuple[str, ...] = (),
    idempotency_key: str | None = None,
) -> Enqueued:
    """Queue a similar job for the library at ``home`` (after ``prerequisites``)."""
    if not 0 <= max_distance <= 32:
        raise ValueError(f"max_distance must be 0..32 bits, got {max_distance!r}")
    return service.submit(
        JOB_TYPE,
        params={"home": str(home), "max_distance": max_distance},
        prerequisites=prerequisites,
        idempotency_key=idempotency_key,
    )


@registry.handler(JOB_TYPE)
def similar(ctx: JobContext) -> None:
    factory = ctx.session_factory
    keys = [f"{asset_id}:{path}" for asset_id, path in _unhashed(factory)]
    for start in range(0, len(keys), _ADD_CHUNK):
        ctx.add_items(keys[start : start + _ADD_CHUNK])

    hashed: list[tuple[int, str]] = []

    def keep(_key: str, result: tuple[int, str | None, tuple[str, str] | None]) -> None:
        asset_id, value, error = result
        if error:
            raise ItemError(*error)
        hashed.append((asset_id, value))

    def record() -> None:
        _store_hashes(factory, hashed)
        hashed.clear()

    ctx.before_flush(record)
    ctx.map(hash_thumbnail, on_result=keep)
    if ctx.should_stop:
        return
    ctx.flush()
    found = find_groups(factory, ctx.params.get("max_distance", DEFAULT_MAX_DISTANCE))
    if not ctx.should_stop:
        _replace_groups(factory, found)
        ctx.log.info("%d groups of near duplicates", len(found))


def hash_thumbnail(params: dict[str, Any], key: str) -> tuple[int, str | None, Any]:
    """The pHash of one asset's stored thumbnail (runs in the worker's item pool)."""
    asset_id, relative = key.split(":", 1)
    path = Path(params["home"]) / relative
    try:
        return int(asset_id), phash.to_text(phash.perceptual_hash_file(path)), None
    except Exception as exc:  # pyvips.Error or OSError: the stored thumbnail is unreadable
        return int(asset_id), None, ("unreadable_rendition", f"{path}: {exc}".strip()[:500])


def _unhashed(factory: sessionmaker[Session]) -> list[tuple[int, str]]:
    query = (
        select(assets.c.id, renditions.c.path)
        .join(renditions, and_(renditions.c.asset_id == assets.c.id))
        .where(assets.c.phash.is_(None), renditions.c.kind == "thumbnail")
        .order_by(assets.c.id)
    )
    with read_session(factory) as session:
        return [(row.id, row.path) for row in session.execute(query)]


@transactional
def _store_hashes(factory: sessionmaker[Session], hashed: list[tuple[int, str]]) -> None:
    if not hashed:
        return
    now = utc_now()
    with write_session(factory) as session:
        for asset_id, value in hashed:
            session.execute(
                update(assets).where(assets.c.id == asset_id).values(phash=value, updated_at=now)
            )


def keeper_order(asset: dict[str, Any]) -> tuple[Any, ...]:
    """Sort key of the best candidate to keep: largest resolution, then oldest capture
    (local wall-clock time as recorded), then the first catalogued."""
    return (-(asset["width"] * asset["height"]), asset["taken_local"], asset["id"])


def find_groups(factory: sessionmaker[Session], max_distance: int) -> list[list[dict[str, Any]]]:
    """Near-duplicate groups among assets with a present file, keeper first; each
    member carries its ``distance`` to the keeper."""
    present = select(files.c.asset_id).where(files.c.state == PRESENT)
    query = (
        select(assets.c.id, assets.c.phash, assets.c.width, assets.c.height, assets.c.taken_local)
        .where(assets.c.phash.is_not(None), assets.c.id.in_(present))
        .order_by(assets.c.id)
    )
    with read_session(factory) as session:
        rows = [dict(row._mapping) for row in session.execute(query)]
    hashes = [phash.from_text(row["phash"]) for row in rows]
    result = []
    for members in phash.groups(hashes, max_distance):
        group = sorted((rows[i] for i in members), key=keeper_order)
        keeper_hash = phash.from_text(group[0]["phash"])
        for member in group:
            member["distance"] = phash.distance(keeper_hash, phash.from_text(member["phash"]))
        result.append(group)
    return result


@transactional
def _replace_groups(factory: sessionmaker[Session], found: list[list[dict[str, Any]]]) -> None:
    now = utc_now()
    rows = [
        {
            "asset_id": member["id"],
            "group_id": group[0]["id"],
            "distance": member["distance"],
            "created_at": now,
        }
        for group in found
        for member in group
    ]
    with write_session(factory) as session:
        session.execute(delete(near_duplicates))
        for start in range(0, len(rows), _INSERT_CHUNK):
            session.execute(insert(near_duplicates), rows[start : start + _INSERT_CHUNK])


def near_duplicate_groups(factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    """The near-duplicate groups the last ``similar`` job found, largest first:
    ``{"keeper": asset_id, "assets": [{"asset_id", "keep", "distance", "width",
    "height", "taken_local", "content_hash", "format", "files": [{"source",
    "path"}]}]}`` with the keeper first (largest resolution, then oldest)."""
    query = (
        select(
            near_duplicates.c.group_id,
            near_duplicates.c.distance,
            assets.c.id,
            assets.c.width,
            assets.c.height,
            assets.c.taken_local,
            assets.c.content_hash,
            assets.c.format,
            files.c.path,
            sources.c.path.label("source_path"),
        )
        .join(assets, assets.c.id == near_duplicates.c.asset_id)
        .join(files, and_(files.c.asset_id == assets.c.id, files.c.state == PRESENT))
        .join(sources, sources.c.id == files.c.source_id)
        .order_by(near_duplicates.c.group_id, assets.c.id, sources.c.path, files.c.path)
    )
    with read_session(factory) as session:
        rows = session.execute(query).all()
    groups: dict[int, dict[int, dict[str, Any]]] = {}
    for row in rows:
        members = groups.setdefault(row.group_id, {})
        member = members.setdefault(
            row.id,
            {
                "asset_id": row.id,
                "keep": row.id == row.group_id,
                "distance": row.distance,
                "width": row.width,
                "height": row.height,
                "taken_local": row.taken_local,
                "content_hash": row.content_hash,
                "format": row.format,
                "files": [],
            },
        )
        member["files"].append({"source": row.source_path, "path": row.path})
    result = []
    for keeper, members in groups.items():
        ordered = sorted(
            members.values(),
            key=lambda m: (not m["keep"], *keeper_order({**m, "id": m["asset_id"]})),
        )
        if len(ordered) > 1:  # a member whose files all vanished since leaves the group
            result.append({"keeper": keeper, "assets": ordered})
    return sorted(result, key=lambda g: (-len(g["assets"]), g["keeper"]))
