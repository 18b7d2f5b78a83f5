"""Perceptual hashes: near copies stay close, other scenes far; the index finds exactly
the pairs a brute-force comparison finds."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from photo_pipeline.media import phash
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories.near_copies import write_near_copies

NEAR = 12  # the default PHOTO_PIPELINE_NEAR_DISTANCE
SMALL = RenderSettings(thumbnail_size=128, preview_size=320)


def test_near_copies_are_close_and_other_scenes_far(tmp_path):
    families = [write_near_copies(tmp_path / f"s{seed}", seed) for seed in (1, 2, 3)]
    hashes = [{name: render_file(p, SMALL).phash for name, p in f.items()} for f in families]
    for family in hashes:
        for name, value in family.items():
            assert phash.distance(family["original"], value) <= NEAR, name
    for a, b in itertools.combinations(hashes, 2):
        for x, y in itertools.product(a.values(), b.values()):
            assert phash.distance(x, y) > NEAR


def test_hash_round_trips_as_text():
    assert phash.from_text(phash.to_text(0xFEDC_BA98_7654_3210)) == 0xFEDC_BA98_7654_3210
    assert phash.to_text(1) == "0000000000000001"


def brute_force(hashes: list[int], max_distance: int) -> set[tuple[int, int, int]]:
    return {
        (i, j, phash.distance(hashes[i], hashes[j]))
        for i, j in itertools.combinations(range(len(hashes)), 2)
        if phash.distance(hashes[i], hashes[j]) <= max_distance
    }


@st.composite
def clustered_hashes(draw) -> list[int]:
    """Random hashes plus copies of some with a few bits flipped (and exact repeats)."""
    bases = draw(st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=12))
    values = list(bases)
    for _ in range(draw(st.integers(0, 30))):
        value = draw(st.sampled_from(bases))
        for bit in draw(st.lists(st.integers(0, 63), max_size=14)):
            value ^= 1 << bit
        values.append(value)
    return values


@settings(max_examples=150, deadline=None)
@given(clustered_hashes(), st.integers(0, 20))
def test_index_finds_exactly_the_brute_force_pairs(hashes, max_distance):
    found = list(phash.near_pairs(hashes, max_distance))
    assert len(found) == len(set(found))  # each pair once
    assert set(found) == brute_force(hashes, max_distance)


def test_groups_join_chains_and_leave_singles_out():
    a = 0
    b = a ^ 0b1111  # 4 from a
    c = b ^ (0b1111 << 8)  # 4 from b, 8 from a
    far = 2**64 - 1
    assert phash.groups([a, far, c, b], 4) == [[0, 2, 3]]
    assert phash.groups([a, far], 4) == []


def test_max_distance_is_checked():
    with pytest.raises(ValueError, match="max_distance"):
        list(phash.near_pairs([1, 2], 64))
