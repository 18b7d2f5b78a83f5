"""The ``similar`` job: perceptual hashes and groups of near duplicates.

The render job already stores each asset's pHash (of its thumbnail, while it has it in
memory); this job hashes the stored thumbnails of any asset still without one (items),
then brings the groups up to date (pipeline.near.regroup: only the assets whose hash
changed since the last run, looked up in the stored chunks; pipeline.near.groups: an
adaptive radius up to ``max_distance`` bits, stars around a keeper).

For the API and the CLI: :func:`near_group_page` and :func:`iter_near_groups` return
the groups as plain dicts, a page at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import and_, delete, func, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, near_duplicates, renditions, sources
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.media import phash
from photo_pipeline.pipeline.library.catalog import PRESENT, listing_session

# Re-exported: callers regroup through the job's module.
from photo_pipeline.pipeline.near.regroup import Regrouped as Regrouped
from photo_pipeline.pipeline.near.regroup import find_groups as find_groups
from photo_pipeline.pipeline.near.regroup import regroup

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
    join_equivalent: bool = False,
) -> Enqueued:
    """Queue a similar job for the library at ``home`` (after ``prerequisites``); with
    ``join_equivalent``, the same similar already waiting on them is returned instead."""
    if not 0 <= max_distance <= 32:
        raise ValueError(f"max_distance must be 0..32 bits, got {max_distance!r}")
    return service.submit(
        JOB_TYPE,
        params={"home": str(home), "max_distance": max_distance},
        prerequisites=prerequisites,
        idempotency_key=idempotency_key,
        join_equivalent=join_equivalent,
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
        assert value is not None  # a thumbnail that hashed has its hash
        hashed.append((asset_id, value))

    def record() -> None:
        _store_hashes(factory, hashed)
        hashed.clear()

    ctx.before_flush(record)
    ctx.map(hash_thumbnail, on_result=keep)
    if ctx.should_stop:
        return
    ctx.flush()
    if ctx.should_stop:
        return
    done = regroup(factory, ctx.params.get("max_distance", DEFAULT_MAX_DISTANCE))
    ctx.log.info(
        "near duplicates: %s (%d hashes, %d changed, radius %d, %d candidates): %d groups",
        done.mode,
        done.hashes,
        done.changed,
        done.radius,
        done.examined,
        done.groups,
    )


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


@transactional
def _replace_groups(factory: sessionmaker[Session], found: list[list[dict[str, Any]]]) -> None:
    """Store ``found`` as the groups (keeper first, each member's ``id`` and
    ``distance``)."""
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
    """Every near-duplicate group the last ``similar`` job found, by keeper id (see
    ``near_group_page``)."""
    return list(iter_near_groups(factory))


def iter_near_groups(
    factory: sessionmaker[Session], page_size: int = 500
) -> Iterator[dict[str, Any]]:
    """``near_group_page`` after ``near_group_page``: the groups, streamed."""
    after = 0
    while True:
        groups, after_next = near_group_page(factory, after=after, limit=page_size)
        yield from groups
        if after_next is None:
            return
        after = after_next


def near_group_page(
    factory: sessionmaker[Session], *, after: int = 0, limit: int = 100
) -> tuple[list[dict[str, Any]], int | None]:
    """Near-duplicate groups whose keeper's id is above ``after``, by keeper id, at
    most ``limit`` of them, and the ``after`` of the next page (None at the end):
    ``{"keeper": asset_id, "assets": [{"asset_id", "keep", "distance", "width",
    "height", "taken_local", "content_hash", "format", "files": [{"source",
    "path"}]}]}`` with the keeper first (largest resolution, then oldest). A member
    whose files all vanished since leaves its group; a group left with one goes."""
    keepers = (
        select(near_duplicates.c.group_id)
        .where(near_duplicates.c.group_id > after)
        .group_by(near_duplicates.c.group_id)
        .having(func.count() > 1)
        .order_by(near_duplicates.c.group_id)
        .limit(limit + 1)
    )
    with listing_session(factory) as session:
        group_ids = list(session.scalars(keepers))
        more = len(group_ids) > limit
        group_ids = group_ids[:limit]
        # Lookups by key joined here: as one statement, PostgreSQL chose at a million
        # assets to hash every file for a page of 50 groups.
        members = session.execute(
            select(
                near_duplicates.c.group_id, near_duplicates.c.asset_id, near_duplicates.c.distance
            ).where(near_duplicates.c.group_id.in_(group_ids))
        ).all()
        member_ids = sorted({m.asset_id for m in members})
        facts = {
            row.id: row
            for row in session.execute(
                select(
                    assets.c.id,
                    assets.c.width,
                    assets.c.height,
                    assets.c.taken_local,
                    assets.c.content_hash,
                    assets.c.format,
                ).where(assets.c.id.in_(member_ids))
            )
        }
        present = session.execute(
            select(files.c.asset_id, files.c.path, sources.c.path.label("source_path"))
            .join(sources, sources.c.id == files.c.source_id)
            .where(files.c.asset_id.in_(member_ids), files.c.state == PRESENT)
        ).all()
    files_of: dict[int, list[dict[str, str]]] = {}
    for row in sorted(present, key=lambda r: (r.asset_id, r.source_path, r.path)):
        files_of.setdefault(row.asset_id, []).append({"source": row.source_path, "path": row.path})
    groups: dict[int, dict[int, dict[str, Any]]] = {}
    for member in sorted(members, key=lambda m: (m.group_id, m.asset_id)):
        if member.asset_id not in files_of:
            continue  # every file of it vanished since
        fact = facts[member.asset_id]
        groups.setdefault(member.group_id, {})[member.asset_id] = {
            "asset_id": fact.id,
            "keep": fact.id == member.group_id,
            "distance": member.distance,
            "width": fact.width,
            "height": fact.height,
            "taken_local": fact.taken_local,
            "content_hash": fact.content_hash,
            "format": fact.format,
            "files": files_of[member.asset_id],
        }
    result = []
    for keeper, group in groups.items():
        ordered = sorted(
            group.values(),
            key=lambda m: (not m["keep"], *keeper_order({**m, "id": m["asset_id"]})),
        )
        if len(ordered) > 1:
            result.append({"keeper": keeper, "assets": ordered})
    return result, (group_ids[-1] if more else None)
