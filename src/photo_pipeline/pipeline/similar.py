"""The ``similar`` job: perceptual hashes and groups of near duplicates.

The render job already stores each asset's pHash (of its thumbnail, while it has it in
memory); this job hashes the stored thumbnails of any asset still without one (items),
then brings the groups up to date (pipeline.near_groups: an adaptive radius up to
``max_distance`` bits, stars around a keeper). It keeps the pairs it found
(``near_pairs``): a run pairs only the assets updated since the last one with the
library and regroups the parts of the pair graph they touch; a run with nothing new
reads nothing more. A change of ``max_distance`` or of the adaptive radius (the
library grew past a threshold), or a change to more than a quarter of the library,
regroups everything.

For the API and the CLI: :func:`near_group_page` and :func:`iter_near_groups` return
the groups as plain dicts, a page at a time.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Row, and_, delete, exists, func, insert, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import (
    assets,
    files,
    near_duplicates,
    near_index,
    near_pairs,
    renditions,
    sources,
)
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.media import phash
from photo_pipeline.pipeline.catalog import PRESENT, listing_session
from photo_pipeline.pipeline.near_groups import PairFinder, adaptive_radius, star_groups

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


# The same order in SQL.
_KEEPER_ORDER = ((assets.c.width * assets.c.height).desc(), assets.c.taken_local, assets.c.id)
# Assets updated this long before the last run's start are paired again: another
# host's clock may lag behind this one's (a few assets re-paired, at worst).
_CLOCK_MARGIN = timedelta(minutes=2)
_LOAD_BATCH = 50_000
_IN_CHUNK = 500


@dataclass
class Regrouped:
    """What one regroup did: ``unchanged`` (nothing new: nothing read but the
    changed-since query), ``incremental`` (``changed`` assets paired with the
    library) or ``full``."""

    mode: str
    hashes: int = 0
    changed: int = 0
    radius: int = 0
    examined: int = 0  # candidate pairs compared
    groups: int = 0


def regroup(
    factory: sessionmaker[Session], max_distance: int, *, full: bool = False, clock: Any = utc_now
) -> Regrouped:
    """Bring the near-duplicate pairs and groups up to date: pair only the assets
    whose hash changed since the last run with the library (``full``: everything,
    as when the radius changes)."""
    started = clock()
    # Read and let go: a transaction left open through a regroup of a minute would
    # be ended by PostgreSQL's idle-in-transaction timeout.
    with read_session(factory) as session:
        state = session.execute(select(near_index)).one_or_none()
    if full or state is None or state.max_distance != max_distance:
        return _regroup_all(factory, max_distance, started)
    with read_session(factory) as session:
        # Unordered: ordered by id, SQLite would walk the whole table in id order
        # rather than the short range of ix_assets_updated_at.
        changed = sorted(
            session.scalars(
                select(assets.c.id).where(
                    assets.c.updated_at >= state.paired_until - _CLOCK_MARGIN,
                    assets.c.phash.is_not(None),
                )
            )
        )
    if not changed:
        return Regrouped("unchanged", hashes=state.hashes, radius=state.radius)
    if len(changed) * 4 > state.hashes:
        return _regroup_all(factory, max_distance, started)
    ids, values = _load_hashes(factory, by_keeper=False)
    radius = adaptive_radius(len(ids), max_distance)
    if radius != state.radius:
        return _regroup_all(factory, max_distance, started)
    # Changed assets without a present file are not among `ids`: they only lose pairs.
    positions = np.flatnonzero(np.isin(ids, np.array(changed, dtype=np.int64)))
    finder = PairFinder(values, radius)
    left, right, distance = finder.pairs_of(positions.tolist())
    pairs = list(zip(ids[left].tolist(), ids[right].tolist(), distance.tolist(), strict=True))
    groups = _repair(factory, changed, pairs, max_distance, radius, len(ids), started)
    return Regrouped(
        "incremental",
        hashes=len(ids),
        changed=len(changed),
        radius=radius,
        examined=finder.examined,
        groups=groups,
    )


def _load_hashes(factory: sessionmaker[Session], *, by_keeper: bool) -> tuple[np.ndarray, Any]:
    """Ids and hashes of the hashed assets with a present file, by id or in keeper
    order, streamed into arrays (16 bytes an asset)."""
    present = exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
    query = select(assets.c.id, assets.c.phash).where(assets.c.phash.is_not(None), present)
    query = query.order_by(*_KEEPER_ORDER) if by_keeper else query.order_by(assets.c.id)
    id_parts, hash_parts = [], []
    with read_session(factory) as session:
        result = session.execute(query.execution_options(yield_per=_LOAD_BATCH))
        for batch in result.partitions():
            id_parts.append(np.fromiter((row[0] for row in batch), dtype=np.int64))
            hash_parts.append(
                np.fromiter((int(row[1], 16) for row in batch), dtype=np.uint64, count=len(batch))
            )
    if not id_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
    return np.concatenate(id_parts), np.concatenate(hash_parts)


@transactional
def _regroup_all(factory: sessionmaker[Session], max_distance: int, started: Any) -> Regrouped:
    ids, values = _load_hashes(factory, by_keeper=True)
    radius = adaptive_radius(len(ids), max_distance)
    finder = PairFinder(values, radius)
    left, right, distance = finder.all_pairs()
    # Nodes are numbered in keeper order: node 0 is the best to keep.
    found = star_groups(len(ids), left.tolist(), right.tolist(), distance.tolist())
    first, second = ids[left], ids[right]
    pair_rows = [
        {"asset_id": min(a, b), "other_id": max(a, b), "distance": d}
        for a, b, d in zip(first.tolist(), second.tolist(), distance.tolist(), strict=True)
    ]
    now = utc_now()
    group_rows = [
        {
            "asset_id": int(ids[node]),
            "group_id": int(ids[group[0][0]]),
            "distance": d,
            "created_at": now,
        }
        for group in found
        for node, d in group
    ]
    with write_session(factory) as session:
        session.execute(delete(near_pairs))
        _insert_all(session, near_pairs, pair_rows)
        session.execute(delete(near_duplicates))
        _insert_all(session, near_duplicates, group_rows)
        _save_state(session, max_distance, radius, len(ids), started)
    return Regrouped(
        "full",
        hashes=len(ids),
        changed=len(ids),
        radius=radius,
        examined=finder.examined,
        groups=len(found),
    )


@transactional
def _repair(
    factory: sessionmaker[Session],
    changed: list[int],
    pairs: list[tuple[int, int, int]],
    max_distance: int,
    radius: int,
    hashes: int,
    started: Any,
) -> int:
    """Replace the pairs of the ``changed`` assets and regroup the connected parts of
    the pair graph they touch (before and after): stars never cross those parts, so
    the result is the one a full regroup would give."""
    now = utc_now()
    with write_session(factory) as session:
        touched = set(changed)
        for chunk in _chunks(changed):
            touching = or_(near_pairs.c.asset_id.in_(chunk), near_pairs.c.other_id.in_(chunk))
            for a, b in session.execute(
                select(near_pairs.c.asset_id, near_pairs.c.other_id).where(touching)
            ):
                touched.update((a, b))
            session.execute(delete(near_pairs).where(touching))
        _insert_all(
            session,
            near_pairs,
            [{"asset_id": a, "other_id": b, "distance": d} for a, b, d in pairs],
        )
        touched.update(x for a, b, _ in pairs for x in (a, b))
        # The connected parts of the pair graph around everything touched.
        part: set[int] = set()
        edges: dict[tuple[int, int], int] = {}
        frontier = set(touched)
        while frontier:
            part |= frontier
            found: set[int] = set()
            for chunk in _chunks(sorted(frontier)):
                for a, b, d in session.execute(
                    select(
                        near_pairs.c.asset_id, near_pairs.c.other_id, near_pairs.c.distance
                    ).where(or_(near_pairs.c.asset_id.in_(chunk), near_pairs.c.other_id.in_(chunk)))
                ):
                    edges[(a, b)] = d
                    found.update((a, b))
            frontier = found - part
        members = sorted(part)
        ranked: list[Row[Any, Any, Any]] = []
        for chunk in _chunks(members):
            ranked.extend(
                session.execute(
                    select(
                        assets.c.id, assets.c.width * assets.c.height, assets.c.taken_local
                    ).where(assets.c.id.in_(chunk))
                ).all()
            )
        ranked_ids = [row[0] for row in sorted(ranked, key=lambda r: (-(r[1] or 0), r[2], r[0]))]
        rank = {asset_id: n for n, asset_id in enumerate(ranked_ids)}
        known = [(a, b, d) for (a, b), d in edges.items() if a in rank and b in rank]
        found_groups = star_groups(
            len(ranked_ids),
            [rank[a] for a, _, _ in known],
            [rank[b] for _, b, _ in known],
            [d for _, _, d in known],
        )
        for chunk in _chunks(members):
            session.execute(delete(near_duplicates).where(near_duplicates.c.asset_id.in_(chunk)))
        _insert_all(
            session,
            near_duplicates,
            [
                {
                    "asset_id": ranked_ids[node],
                    "group_id": ranked_ids[group[0][0]],
                    "distance": d,
                    "created_at": now,
                }
                for group in found_groups
                for node, d in group
            ],
        )
        _save_state(session, max_distance, radius, hashes, started)
    return len(found_groups)


def _chunks(values: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


def _insert_all(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), _INSERT_CHUNK):
        session.execute(insert(table), rows[start : start + _INSERT_CHUNK])


def _save_state(
    session: Session, max_distance: int, radius: int, hashes: int, started: Any
) -> None:
    session.execute(delete(near_index))
    session.execute(
        insert(near_index).values(
            id=1,
            max_distance=max_distance,
            radius=radius,
            hashes=hashes,
            paired_until=started,
            updated_at=utc_now(),
        )
    )


def find_groups(factory: sessionmaker[Session], max_distance: int) -> list[list[dict[str, Any]]]:
    """Near-duplicate groups among assets with a present file, keeper first; each
    member carries its ``distance`` to the keeper (a full regroup, not stored)."""
    ids, values = _load_hashes(factory, by_keeper=True)
    finder = PairFinder(values, adaptive_radius(len(ids), max_distance))
    left, right, distance = finder.all_pairs()
    found = star_groups(len(ids), left.tolist(), right.tolist(), distance.tolist())
    return [[{"id": int(ids[node]), "distance": d} for node, d in group] for group in found]


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
        _insert_all(session, near_duplicates, rows)


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
