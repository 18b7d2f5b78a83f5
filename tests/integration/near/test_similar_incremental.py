"""`similar` pairs new and changed assets through the stored chunks (near_chunks),
never by reading every hash, and ends exactly where a full regroup would: through new
copies and strangers, a changed hash, a last file gone missing, metadata-only
updates, a stored layout the library outgrew, and a library paired before the chunks
were stored."""

from __future__ import annotations

import random
from datetime import timedelta

import numpy as np
import pytest
from sqlalchemy import event, select, update

from photo_pipeline.db.schema import (
    assets,
    files,
    near_chunks,
    near_duplicates,
    near_index,
    near_pairs,
)
from photo_pipeline.pipeline.near.groups import Layout, PairFinder, adaptive_radius
from photo_pipeline.pipeline.near.similar import find_groups, regroup
from tests.support.catalogue_rows import NOW, add_assets


def planted(count: int, rng: random.Random) -> list[int]:
    """Random hashes, a tenth of them copies 0-12 bits from an earlier one."""
    hashes: list[int] = []
    for n in range(count):
        if n and rng.random() < 0.1:
            value = hashes[rng.randrange(n)]
            for bit in rng.sample(range(64), rng.randint(0, 12)):
                value ^= 1 << bit
            hashes.append(value)
        else:
            hashes.append(rng.getrandbits(64))
    return hashes


def near(value: int, rng: random.Random, bits: int) -> int:
    for bit in rng.sample(range(64), bits):
        value ^= 1 << bit
    return value


def stored_groups(factory) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    with factory.begin() as session:
        rows = session.execute(
            select(
                near_duplicates.c.group_id, near_duplicates.c.asset_id, near_duplicates.c.distance
            )
        ).all()
    groups: dict[int, list[tuple[int, int]]] = {}
    for group_id, asset_id, distance in rows:
        groups.setdefault(group_id, []).append((asset_id, distance))
    return {(keeper, tuple(sorted(members))) for keeper, members in groups.items()}


def computed_groups(factory) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    return {
        (g[0]["id"], tuple(sorted((m["id"], m["distance"]) for m in g)))
        for g in find_groups(factory, 12)
    }


def eligible(factory) -> dict[int, int]:
    """Hash of every asset with one and a present file."""
    with factory.begin() as session:
        present = select(files.c.asset_id).where(files.c.state == "present")
        rows = session.execute(
            select(assets.c.id, assets.c.phash).where(
                assets.c.phash.is_not(None), assets.c.id.in_(present)
            )
        ).all()
    return {asset_id: int(value, 16) for asset_id, value in rows}


def assert_same_as_a_full_regroup(factory) -> None:
    """Stored groups, pairs and chunks are what a regroup from scratch gives."""
    assert stored_groups(factory) == computed_groups(factory)
    hashes = eligible(factory)
    ids = sorted(hashes)
    values = np.array([hashes[i] for i in ids], dtype=np.uint64)
    with factory.begin() as session:
        state = session.execute(select(near_index)).one()
        pairs = {tuple(row) for row in session.execute(select(near_pairs))}
        chunks = {tuple(row) for row in session.execute(select(near_chunks))}
    assert state.hashes == len(ids)
    assert state.radius == adaptive_radius(len(ids), 12)
    left, right, distance = PairFinder(values, state.radius).all_pairs()
    assert pairs == {
        (ids[a], ids[b], d)
        for a, b, d in zip(left.tolist(), right.tolist(), distance.tolist(), strict=True)
    }
    layout = Layout.parse(state.chunk_bits, state.radius)
    signed = values.view(np.int64).tolist()
    assert chunks == {
        (chunk, int(key), asset_id, value)
        for chunk in range(len(layout.widths))
        for asset_id, key, value in zip(ids, layout.keys(values, chunk), signed, strict=True)
    }


class Statements:
    """The SQL an engine runs while listening."""

    def __init__(self, factory) -> None:
        self.engine = factory.kw["bind"]
        self.seen: list[str] = []

    def _record(self, _conn, _cursor, statement, *_args) -> None:
        self.seen.append(" ".join(statement.split()))

    def __enter__(self) -> Statements:
        event.listen(self.engine, "before_cursor_execute", self._record)
        return self

    def __exit__(self, *_exc) -> None:
        event.remove(self.engine, "before_cursor_execute", self._record)


def test_changes_are_paired_through_the_chunks_and_end_as_a_full_regroup(session_factory):
    rng = random.Random(11)
    base = planted(2500, rng)
    add_assets(session_factory, base, first=1, when=NOW)
    first = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    assert first.mode == "full" and first.groups > 50
    assert_same_as_a_full_regroup(session_factory)
    next_id, hour = 2501, 2

    def step(label: str) -> None:
        nonlocal hour
        with Statements(session_factory) as sql:
            done = regroup(
                session_factory, 12, clock=lambda: NOW + timedelta(hours=hour, minutes=30)
            )
        hour += 1
        assert done.mode == "incremental", (label, done)
        # Only what changed and what its probes point at is read: no statement reads
        # the library's hashes without naming the assets it wants.
        reads = [s for s in sql.seen if "assets.phash" in s.split(" FROM ")[0]]
        assert reads and all("assets.id IN" in s for s in reads), reads
        assert_same_as_a_full_regroup(session_factory)

    def touch(ids: list[int], **values) -> None:
        with session_factory.begin() as session:
            session.execute(
                update(assets)
                .where(assets.c.id.in_(ids))
                .values(updated_at=NOW + timedelta(hours=hour), **values)
            )

    # New copies of old photos (joining their groups or founding one) and strangers.
    copies = [near(base[n], rng, rng.randint(0, 6)) for n in rng.sample(range(2500), 15)]
    strangers = [rng.getrandbits(64) for _ in range(15)]
    add_assets(session_factory, copies + strangers, first=next_id, when=NOW + timedelta(hours=hour))
    next_id += 30
    step("new assets")

    # A re-render changed a keeper's hash: it leaves its group for another.
    hashes = eligible(session_factory)
    keeper = min(stored_groups(session_factory))[0]
    other = next(i for i in sorted(hashes) if (hashes[i] ^ hashes[keeper]).bit_count() > 20)
    touch([keeper], phash=f"{near(hashes[other], rng, 2):016x}")
    step("changed hash")

    # The last file of a grouped member went missing (scan marks the asset updated).
    member = next(m for _, group in stored_groups(session_factory) for m, d in group if d)
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id == member).values(state="missing"))
    touch([member])
    step("file gone")

    # Metadata only (a place, a time shift): nothing to pair, nothing examined.
    touch(list(range(1, 200)), city="Paris")
    done = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=hour, minutes=30))
    hour += 1
    assert (done.mode, done.examined) == ("unchanged", 0)
    assert_same_as_a_full_regroup(session_factory)

    # The missing file is back.
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id == member).values(state="present"))
    touch([member])
    step("file back")


def test_new_assets_examine_a_small_share_of_what_a_full_regroup_does(session_factory):
    rng = random.Random(12)
    add_assets(session_factory, planted(4000, rng), first=1, when=NOW)
    full = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    add_assets(
        session_factory,
        [rng.getrandbits(64) for _ in range(10)],
        first=4001,
        when=NOW + timedelta(hours=2),
    )
    step = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=3))
    assert (step.mode, step.changed, step.hashes) == ("incremental", 10, 4010)
    assert step.examined * 100 < full.examined
    assert_same_as_a_full_regroup(session_factory)


@pytest.mark.parametrize("chunks", ["fitting", "not stored", "far off"])
def test_a_library_without_fitting_chunks_regroups_in_full_once(session_factory, chunks):
    """No chunks stored (a library paired before they were) or a layout far off the
    library's size: the next run regroups everything and stores fitting chunks; the
    run after is incremental again."""
    rng = random.Random(13)
    add_assets(session_factory, planted(3000, rng), first=1, when=NOW)
    regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    with session_factory.begin() as session:
        if chunks == "not stored":  # as migration 0016 leaves a paired library
            session.execute(update(near_index).values(chunk_bits=None))
            session.execute(near_chunks.delete())
        elif chunks == "far off":  # tables of 65,536 values, 697 probes each, for 3,000
            session.execute(update(near_index).values(chunk_bits="16,16,16,16"))
    mode = "incremental" if chunks == "fitting" else "full"
    add_assets(session_factory, [rng.getrandbits(64)], first=3001, when=NOW + timedelta(hours=2))
    done = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=3))
    assert done.mode == mode
    assert_same_as_a_full_regroup(session_factory)
    add_assets(session_factory, [rng.getrandbits(64)], first=3002, when=NOW + timedelta(hours=4))
    again = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=5))
    assert again.mode == "incremental"
    assert_same_as_a_full_regroup(session_factory)


def test_many_changes_at_once_regroup_in_full(session_factory):
    rng = random.Random(14)
    add_assets(session_factory, planted(1000, rng), first=1, when=NOW)
    regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    add_assets(session_factory, planted(600, rng), first=1001, when=NOW + timedelta(hours=2))
    done = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=3))
    assert done.mode == "full"
    assert_same_as_a_full_regroup(session_factory)


def test_a_stored_asset_whose_files_went_missing_unnoticed_is_not_paired(session_factory):
    """Its file marked missing without the asset being updated: it keeps its chunks,
    but a new copy of it is not paired with it."""
    rng = random.Random(15)
    base = planted(1000, rng)
    add_assets(session_factory, base, first=1, when=NOW)
    regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id == 500).values(state="missing"))
    add_assets(session_factory, [base[499] ^ 1], first=1001, when=NOW + timedelta(hours=2))
    done = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=3))
    assert done.mode == "incremental"
    with session_factory.begin() as session:
        pairs = session.execute(select(near_pairs).where(near_pairs.c.other_id == 1001)).all()
    assert [row.asset_id for row in pairs if row.asset_id == 500] == []
    assert stored_groups(session_factory) == computed_groups(session_factory)


def test_a_library_with_fewer_than_two_hashes_is_not_paired_until_it_has_two(session_factory):
    assert regroup(session_factory, 12).mode == "nothing to pair"  # empty
    add_assets(session_factory, [0x0F0F_0F0F_0F0F_0F0F], first=1, when=NOW)
    lonely = regroup(session_factory, 12)
    assert (lonely.mode, lonely.hashes) == ("nothing to pair", 1)
    with session_factory.begin() as session:
        assert session.execute(select(near_index)).one_or_none() is None
    add_assets(session_factory, [0x0F0F_0F0F_0F0F_0F0E], first=2, when=NOW + timedelta(hours=1))
    paired = regroup(session_factory, 12)
    assert (paired.mode, paired.groups) == ("full", 1)
    assert stored_groups(session_factory) == computed_groups(session_factory)
