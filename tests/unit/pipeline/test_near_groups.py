"""Near-duplicate grouping at any size: exact pair search, stars without chains, an
adaptive radius, and precision on planted clusters among random hashes."""

from __future__ import annotations

import random
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from photo_pipeline.pipeline.near.groups import (
    Layout,
    PairFinder,
    adaptive_radius,
    chance_pairs,
    layout_fits,
    layout_for,
    star_groups,
)


def brute_force(hashes: list[int], radius: int) -> set[tuple[int, int, int]]:
    return {
        (i, j, (hashes[i] ^ hashes[j]).bit_count())
        for i, j in combinations(range(len(hashes)), 2)
        if (hashes[i] ^ hashes[j]).bit_count() <= radius
    }


@st.composite
def clustered_hashes(draw) -> list[int]:
    bases = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=12))
    values = list(bases)
    for _ in range(draw(st.integers(0, 40))):
        value = draw(st.sampled_from(bases))
        for bit in draw(st.lists(st.integers(0, 63), max_size=14)):
            value ^= 1 << bit
        values.append(value)
    return values


def as_set(found) -> set[tuple[int, int, int]]:
    left, right, distance = found
    return set(zip(left.tolist(), right.tolist(), distance.tolist(), strict=True))


@settings(max_examples=80, deadline=None)
@given(clustered_hashes(), st.integers(0, 14))
def test_all_pairs_are_exactly_the_brute_force_pairs(hashes, radius):
    found = PairFinder(np.array(hashes, dtype=np.uint64), radius).all_pairs()
    assert len(found[0]) == len(as_set(found))  # each pair once
    assert as_set(found) == brute_force(hashes, radius)


@settings(max_examples=60, deadline=None)
@given(clustered_hashes(), st.integers(0, 14), st.data())
def test_pairs_of_some_hashes_are_the_brute_force_pairs_touching_them(hashes, radius, data):
    asking = data.draw(st.sets(st.integers(0, len(hashes) - 1)))
    found = PairFinder(np.array(hashes, dtype=np.uint64), radius).pairs_of(asking)
    expected = {p for p in brute_force(hashes, radius) if p[0] in asking or p[1] in asking}
    assert as_set(found) == expected


def test_layouts_differ_with_size_and_stay_exact():
    rng = np.random.default_rng(3)
    hashes = rng.integers(0, 2**63, size=3000, dtype=np.uint64)
    hashes[1:40] = hashes[0] ^ np.uint64(0b101)  # a dense spot
    distances = np.bitwise_count(hashes[:, None] ^ hashes[None, :])
    layouts = set()
    for radius in (2, 5, 8, 12):
        finder = PairFinder(hashes, radius)
        layouts.add(finder.layout)
        left, right = np.nonzero(np.triu(distances <= radius, k=1))
        expected = zip(left.tolist(), right.tolist(), distances[left, right].tolist(), strict=True)
        assert as_set(finder.all_pairs()) == set(expected)
    assert len(layouts) > 1


def test_stars_do_not_chain_through_a_middle_photo():
    # 0 - 1 - 2: 0 and 2 are not neighbours. Node 0 is the best keeper.
    assert star_groups(3, [0, 1], [1, 2], [5, 6]) == [[(0, 0), (1, 5)]]
    # The middle one keeps both when it ranks first.
    assert star_groups(3, [0, 0], [1, 2], [5, 6]) == [[(0, 0), (1, 5), (2, 6)]]
    assert star_groups(4, [], [], []) == []


def test_the_radius_shrinks_as_chance_pairs_would_grow():
    assert [adaptive_radius(n, 12) for n in (1_000, 10_000, 100_000, 1_000_000)] == [
        12,
        12,
        10,
        8,
    ]
    assert adaptive_radius(10, 6) == 6  # never above the ceiling
    assert chance_pairs(1_000_000, 8) < 200 < chance_pairs(1_000_000, 9)


def planted(size: int, seed: int) -> tuple[list[int], list[int]]:
    """Uniform random hashes, 5% of them in clusters of 2-5 copies within 12 bits of
    an original (index order = keeper order: originals get the lowest numbers)."""
    rng = random.Random(seed)
    originals, copies = [], []
    clusters = 0
    while len(originals) + len(copies) < size * 0.05:
        center = rng.getrandbits(64)
        originals.append((center, clusters))
        for _ in range(rng.randint(1, 4)):
            value = center
            for bit in rng.sample(range(64), rng.randint(0, 12)):
                value ^= 1 << bit
            copies.append((value, clusters))
        clusters += 1
    rest = [(rng.getrandbits(64), -1) for _ in range(size - len(originals) - len(copies))]
    nodes = originals + copies + rest
    return [h for h, _ in nodes], [c for _, c in nodes]


def scores(groups: list[list[int]], cluster: list[int]) -> tuple[float, float]:
    def pairs(members: list[int]) -> set[tuple[int, int]]:
        return set(combinations(sorted(members), 2))

    truth: dict[int, list[int]] = {}
    for node, c in enumerate(cluster):
        if c >= 0:
            truth.setdefault(c, []).append(node)
    expected = set().union(*(pairs(m) for m in truth.values()))
    found = set().union(*(pairs(m) for m in groups))
    right = len(found & expected)
    return right / len(found), right / len(expected)


def chained(hashes: list[int], radius: int) -> list[list[int]]:
    left, right, _ = PairFinder(np.array(hashes, dtype=np.uint64), radius).all_pairs()
    parent = list(range(len(hashes)))

    def root(i: int) -> int:
        while parent[i] != i:
            i = parent[i]
        return i

    for a, b in zip(left.tolist(), right.tolist(), strict=True):
        parent[max(root(a), root(b))] = min(root(a), root(b))
    groups: dict[int, list[int]] = {}
    for node in set(left.tolist()) | set(right.tolist()):
        groups.setdefault(root(node), []).append(node)
    return list(groups.values())


@pytest.mark.parametrize("size", [3_000, 20_000])
def test_precision_on_planted_clusters_among_random_hashes(size):
    hashes, cluster = planted(size, seed=size)
    radius = adaptive_radius(size, 12)
    left, right, distance = PairFinder(np.array(hashes, dtype=np.uint64), radius).all_pairs()
    groups = star_groups(size, left.tolist(), right.tolist(), distance.tolist())
    precision, recall = scores([[node for node, _ in g] for g in groups], cluster)
    old_precision, old_recall = scores(chained(hashes, 12), cluster)
    assert precision >= 0.95
    assert precision >= old_precision
    if radius == 12:  # as wide as before: nothing planted is lost
        assert recall >= old_recall
    else:
        assert recall >= 0.7


def test_a_stored_layout_is_kept_until_the_library_outgrows_it():
    stored = layout_for(1_000, 12)
    assert Layout.parse(stored.text, 12) == stored
    assert layout_fits(stored, 1_500, 12)  # the same best layout
    # Another layout is best at 30,000 hashes, but not by enough to cut them again.
    assert layout_for(30_000, 12) != stored and layout_fits(stored, 30_000, 12)
    assert not layout_fits(stored, 100_000, adaptive_radius(100_000, 12))
    with pytest.raises(ValueError):
        Layout.parse("32,32", 8)  # tables of 2**32 values
