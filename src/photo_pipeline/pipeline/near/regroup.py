"""Bringing the near-duplicate pairs and groups up to date (``similar``'s last step).

The pairs (``near_pairs``), the groups (``near_duplicates``) and each paired hash's
chunks (``near_chunks``) are kept between runs, with the state they were found in
(``near_index``: ceiling, radius, hashes, chunk layout, when). A run then does one of:

* **nothing to pair**: never paired, and fewer than two hashes in the library: one
  short read, nothing stored (a first run with two or more pairs in full).
* **unchanged**: no asset was updated since the last run: one index range read.
* **incremental**: the assets updated since then whose hash (or whether it counts:
  it needs a present file) changed are paired with the library by looking up their
  probes in the stored chunks (pipeline.near.chunks: ``k * chunks * probes`` index
  lookups, never every hash), then the parts of the pair graph they touch are
  regrouped. Assets updated for another reason (a place, a time shift) cost one
  lookup each.
* **full**: every hash is read and paired in memory (pipeline.near.groups), and the
  pairs, groups and chunks are written again in bulk. It runs the first time, when
  the ceiling or the adaptive radius changes (the library grew past a threshold), and
  when so many assets changed that looking them up would cost more.

The library's size that sets the radius is counted as chunks are stored and removed;
an asset whose last file went missing without the asset being updated keeps its
chunks until a full run (its pairs are dropped when it is found as a candidate).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

import numpy as np
from sqlalchemy import Row, delete, exists, insert, or_, select, text
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.bulk import insert_rows
from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, near_duplicates, near_index, near_pairs
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.pipeline.library.catalog import PRESENT
from photo_pipeline.pipeline.near import chunks as near_chunks
from photo_pipeline.pipeline.near.groups import (
    Layout,
    PairFinder,
    adaptive_radius,
    layout_fits,
    star_groups,
)

# Assets updated this long before the last run's start are looked at again: another
# host's clock may lag behind this one's (a few assets re-read, at worst).
_CLOCK_MARGIN = timedelta(minutes=2)
# A full run costs about as much as this many index lookups per hash in the library:
# beyond, changes regroup in full. (At a million hashes a full run took 15-29 s, and
# 100 new assets' 76,000 lookups 0.3-0.8 s, on either database.)
_FULL_RUN_LOOKUPS_PER_HASH = 4
_LOAD_BATCH = 50_000
_IN_CHUNK = 500

Pair = tuple[int, int, int]  # (asset id, other asset id, distance), lower id first


@dataclass
class Regrouped:
    """What one regroup did: ``unchanged``, ``incremental`` (``changed`` assets paired
    with the library) or ``full``."""

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
    whose hash changed since the last run with the library (``full``: everything)."""
    started = clock()
    # Read and let go: a transaction left open through a regroup of a minute would
    # be ended by PostgreSQL's idle-in-transaction timeout.
    with read_session(factory) as session:
        state = session.execute(select(near_index)).one_or_none()
        if state is None and not full:
            hashed = _hashed_count(session)
            if hashed < 2:
                # Never paired and nothing to pair yet (an import of one photo): no
                # index is stored, so the first run with two hashes pairs in full.
                return Regrouped("nothing to pair", hashes=hashed)
    if full or state is None or state.max_distance != max_distance or state.chunk_bits is None:
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
    return _regroup_changed(factory, state, changed, started)


def _hashed_count(session: Session) -> int:
    """Assets with a hash, up to 2 (all a caller needs to know)."""
    query = select(assets.c.id).where(assets.c.phash.is_not(None)).limit(2)
    return len(session.scalars(query).all())


def find_groups(factory: sessionmaker[Session], max_distance: int) -> list[list[dict[str, Any]]]:
    """Near-duplicate groups among assets with a present file, keeper first; each
    member carries its ``distance`` to the keeper (a full regroup, not stored)."""
    ids, values = _load_hashes(factory)
    finder = PairFinder(values, adaptive_radius(len(ids), max_distance))
    pairs = _as_pairs(ids, *finder.all_pairs())
    return [[{"id": a, "distance": d} for a, d in group] for group in _groups(factory, pairs)]


def _load_hashes(factory: sessionmaker[Session]) -> tuple[np.ndarray, np.ndarray]:
    """Ids (ascending) and hashes of the hashed assets with a present file, streamed
    into arrays (16 bytes an asset)."""
    present = exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
    query = (
        select(assets.c.id, assets.c.phash)
        .where(assets.c.phash.is_not(None), present)
        .order_by(assets.c.id)
    )
    id_parts, hex_parts = [], []
    with read_session(factory) as session:
        result = session.execute(query.execution_options(yield_per=_LOAD_BATCH))
        for batch in result.partitions():
            id_parts.append(np.fromiter((row[0] for row in batch), np.int64, len(batch)))
            hex_parts.append("".join([row[1] for row in batch]))
    if not id_parts:
        return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint64)
    # 16 hex digits an asset: one parse of them all, big-endian words.
    values = np.frombuffer(bytes.fromhex("".join(hex_parts)), dtype=">u8").astype(np.uint64)
    return np.concatenate(id_parts), values


def _regroup_all(factory: sessionmaker[Session], max_distance: int, started: Any) -> Regrouped:
    ids, values = _load_hashes(factory)
    radius = adaptive_radius(len(ids), max_distance)
    finder = PairFinder(values, radius)
    pairs = _as_pairs(ids, *finder.all_pairs())
    groups = _groups(factory, pairs)
    state = (max_distance, radius, len(ids), started)
    _write_all(factory, pairs, groups, ids, values, finder.layout, state)
    _refresh_statistics(factory)
    return Regrouped(
        "full",
        hashes=len(ids),
        changed=len(ids),
        radius=radius,
        examined=finder.examined,
        groups=len(groups),
    )


def _as_pairs(ids: np.ndarray, left: np.ndarray, right: np.ndarray, distance: Any) -> list[Pair]:
    """Index pairs as asset-id pairs (ids ascending: ``left < right`` keeps order)."""
    return list(zip(ids[left].tolist(), ids[right].tolist(), distance.tolist(), strict=True))


def _groups(factory: sessionmaker[Session], pairs: list[Pair]) -> list[list[tuple[int, int]]]:
    """Star groups of the paired assets as ``(asset id, distance to the keeper)``,
    keeper first; only the paired assets' keeper facts are read."""
    with read_session(factory) as session:
        ranked = _in_keeper_order(session, sorted({x for a, b, _ in pairs for x in (a, b)}))
    return _stars(ranked, pairs)


def _stars(ranked: list[int], pairs: Sequence[Pair]) -> list[list[tuple[int, int]]]:
    rank = {asset_id: n for n, asset_id in enumerate(ranked)}
    known = [(a, b, d) for a, b, d in pairs if a in rank and b in rank]
    found = star_groups(
        len(ranked),
        [rank[a] for a, _, _ in known],
        [rank[b] for _, b, _ in known],
        [d for _, _, d in known],
    )
    return [[(ranked[node], d) for node, d in group] for group in found]


def _in_keeper_order(session: Session, ids: list[int]) -> list[int]:
    """``ids`` best keeper first: largest resolution, then oldest capture (local
    wall-clock time as recorded), then the first catalogued (similar.keeper_order)."""
    facts: list[Row[Any, Any, Any]] = []
    for chunk in _chunks(ids):
        facts.extend(
            session.execute(
                select(assets.c.id, assets.c.width * assets.c.height, assets.c.taken_local).where(
                    assets.c.id.in_(chunk)
                )
            ).all()
        )
    return [row[0] for row in sorted(facts, key=lambda r: (-(r[1] or 0), r[2], r[0]))]


@transactional
def _refresh_statistics(factory: sessionmaker[Session]) -> None:
    """PostgreSQL plans by table statistics, and autovacuum gathers them a minute or so
    after a bulk write: until then a page of near groups read every group (15 ms
    instead of 0.08 ms at a million assets, bench/scale.py). SQLite needs none."""
    if is_postgresql(factory):
        with write_session(factory) as session:
            session.execute(text("ANALYZE near_pairs, near_duplicates, near_chunks"))


@transactional
def _write_all(
    factory: sessionmaker[Session],
    pairs: list[Pair],
    groups: list[list[tuple[int, int]]],
    ids: np.ndarray,
    values: np.ndarray,
    layout: Layout,
    state: tuple[int, int, int, Any],
) -> None:
    now = utc_now()
    with write_session(factory) as session:
        session.execute(delete(near_pairs))
        insert_rows(session, near_pairs, [_pair_row(p) for p in pairs])
        session.execute(delete(near_duplicates))
        insert_rows(session, near_duplicates, _group_rows(groups, now))
        near_chunks.rebuild(session, ids, values, layout)
        _save_state(session, layout, *state)


def _regroup_changed(
    factory: sessionmaker[Session], state: Row[Any], changed: list[int], started: Any
) -> Regrouped:
    """Pair the ``changed`` assets whose hash or eligibility changed with the library
    through the stored chunks, or regroup everything when that would cost more."""
    with read_session(factory) as session:
        current = _current_hashes(session, changed)
        stored = near_chunks.stored_hashes(session, changed)
    moved = [a for a in changed if current.get(a) != stored.get(a)]
    added = [a for a in moved if a in current]
    # The library's size as counted in chunks: the new ones in, the ones gone out.
    entered = sum(a not in stored for a in added)
    left = sum(a not in current for a in moved)
    hashes = state.hashes + entered - left
    radius = adaptive_radius(hashes, state.max_distance)
    layout = Layout.parse(state.chunk_bits, radius)
    if (
        radius != state.radius
        or not layout_fits(layout, hashes, radius)
        or len(added) * layout.lookups > _FULL_RUN_LOOKUPS_PER_HASH * hashes
    ):
        return _regroup_all(factory, state.max_distance, started)
    after = (state.max_distance, radius, hashes, started)
    if not moved:
        with write_session(factory) as session:
            _save_state(session, layout, *after)
        return Regrouped("unchanged", hashes=hashes, radius=radius)
    values = np.array([current[a] for a in added], dtype=np.uint64)
    pairs, examined = _pairs_of(factory, added, values, moved, radius, layout)
    gone = {a: stored[a] for a in moved if a in stored}
    groups = _repair(factory, moved, pairs, gone, (added, values), layout, after)
    return Regrouped(
        "incremental",
        hashes=hashes,
        changed=len(moved),
        radius=radius,
        examined=examined,
        groups=groups,
    )


def _current_hashes(session: Session, ids: list[int]) -> dict[int, int]:
    """The hash of each of assets ``ids`` that has one and a present file."""
    present = exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
    found: dict[int, int] = {}
    for chunk in _chunks(ids):
        for asset_id, value in session.execute(
            select(assets.c.id, assets.c.phash).where(
                assets.c.id.in_(chunk), assets.c.phash.is_not(None), present
            )
        ):
            found[asset_id] = int(value, 16)
    return found


def _pairs_of(
    factory: sessionmaker[Session],
    added: list[int],
    values: np.ndarray,
    moved: list[int],
    radius: int,
    layout: Layout,
) -> tuple[list[Pair], int]:
    """The pairs of the ``added`` assets (hashes ``values``): with the stored chunks
    of every asset that did not move, and among themselves; and the candidates
    compared."""
    ids = np.array(added, dtype=np.int64)
    with read_session(factory) as session:
        asking, other, other_hash = near_chunks.candidates(session, values, layout)
    distance = np.bitwise_count(values[asking] ^ other_hash).astype(np.int64)
    # The stored chunks of moved assets are about to be replaced: pairs among the
    # added ones come from the search among themselves.
    close = (distance <= radius) & ~np.isin(other, np.array(moved, dtype=np.int64))
    asker = ids[asking[close]].tolist()
    found = set(zip(asker, other[close].tolist(), distance[close].tolist(), strict=True))
    # A stored asset whose files all went missing since is no longer paired.
    with read_session(factory) as session:
        present = _with_present_file(session, sorted({b for _, b, _ in found}))
    pairs = [(min(a, b), max(a, b), d) for a, b, d in found if b in present]
    finder = PairFinder(values, radius)
    pairs += _as_pairs(ids, *finder.all_pairs())
    return sorted(pairs), len(asking) + finder.examined


def _with_present_file(session: Session, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for chunk in _chunks(ids):
        found.update(
            session.scalars(
                select(files.c.asset_id)
                .where(files.c.asset_id.in_(chunk), files.c.state == PRESENT)
                .distinct()
            )
        )
    return found


@transactional
def _repair(
    factory: sessionmaker[Session],
    moved: list[int],
    pairs: list[Pair],
    old: dict[int, int],
    new: tuple[list[int], np.ndarray],
    layout: Layout,
    state: tuple[int, int, int, Any],
) -> int:
    """Replace the pairs of the ``moved`` assets and their chunks (the ``old`` hashes'
    by the ``new`` ones) and regroup the connected parts of the pair graph they touch
    (before and after): stars never cross those parts, so the result is the one a
    full regroup would give."""
    now = utc_now()
    with write_session(factory) as session:
        touched = set(moved)
        for chunk in _chunks(moved):
            touching = or_(near_pairs.c.asset_id.in_(chunk), near_pairs.c.other_id.in_(chunk))
            for a, b in session.execute(
                select(near_pairs.c.asset_id, near_pairs.c.other_id).where(touching)
            ):
                touched.update((a, b))
            session.execute(delete(near_pairs).where(touching))
        insert_rows(session, near_pairs, [_pair_row(p) for p in pairs])
        near_chunks.remove(session, old, layout)
        near_chunks.add(session, *new, layout)
        touched.update(x for a, b, _ in pairs for x in (a, b))
        part, edges = _connected(session, touched)
        members = sorted(part)
        groups = _stars(_in_keeper_order(session, members), edges)
        for chunk in _chunks(members):
            session.execute(delete(near_duplicates).where(near_duplicates.c.asset_id.in_(chunk)))
        insert_rows(session, near_duplicates, _group_rows(groups, now))
        _save_state(session, layout, *state)
    return len(groups)


def _connected(session: Session, touched: set[int]) -> tuple[set[int], list[Pair]]:
    """The connected parts of the pair graph around ``touched``: members and pairs."""
    part: set[int] = set()
    edges: dict[tuple[int, int], int] = {}
    frontier = set(touched)
    while frontier:
        part |= frontier
        found: set[int] = set()
        for chunk in _chunks(sorted(frontier)):
            for a, b, d in session.execute(
                select(near_pairs.c.asset_id, near_pairs.c.other_id, near_pairs.c.distance).where(
                    or_(near_pairs.c.asset_id.in_(chunk), near_pairs.c.other_id.in_(chunk))
                )
            ):
                edges[(a, b)] = d
                found.update((a, b))
        frontier = found - part
    return part, [(a, b, d) for (a, b), d in edges.items()]


def _pair_row(pair: Pair) -> dict[str, int]:
    a, b, d = pair
    return {"asset_id": a, "other_id": b, "distance": d}


def _group_rows(groups: list[list[tuple[int, int]]], now: Any) -> list[dict[str, Any]]:
    return [
        {"asset_id": asset_id, "group_id": group[0][0], "distance": d, "created_at": now}
        for group in groups
        for asset_id, d in group
    ]


def _chunks(values: list[int]) -> Iterator[list[int]]:
    for start in range(0, len(values), _IN_CHUNK):
        yield values[start : start + _IN_CHUNK]


def _save_state(
    session: Session, layout: Layout, max_distance: int, radius: int, hashes: int, started: Any
) -> None:
    session.execute(delete(near_index))
    session.execute(
        insert(near_index).values(
            id=1,
            max_distance=max_distance,
            radius=radius,
            hashes=hashes,
            paired_until=started,
            chunk_bits=layout.text,
            updated_at=utc_now(),
        )
    )
