"""Groups of near duplicates among 64-bit perceptual hashes, at any library size.

Three decisions, each against what the old connected-components grouping did at a
million assets (a quarter of the library flagged, half of it by chance):

* **An adaptive radius.** Two unrelated photos fall within ``d`` bits of each other
  with probability ``P(d) = sum(C(64, i) for i <= d) / 2**64`` (pHash bits of different
  scenes are close to independent coin flips). A library of ``n`` hashes then holds
  about ``n**2 / 2 * P(d)`` chance pairs: 11 at 10,000 hashes and 12 bits, 110,000 at a
  million. The radius is the largest, up to the configured ceiling, that keeps the
  expected chance pairs of the whole library under ``CHANCE_PAIR_BUDGET``: 12 bits at
  10,000 hashes, 10 at 100,000, 8 at a million. Recall of distant copies (heavy crops)
  drops in big libraries; precision does not.
* **Stars, not chains.** Assets are taken in keeper order (the best to keep first);
  each one not yet in a group takes every neighbour not yet in a group as its members.
  Every member lies within the radius of its keeper, so a group never chains A-B-C
  through a middle photo.
* **Candidates by multi-index hashing** with a chunk layout chosen for the size: each
  hash is cut into ``m`` chunks; a pair within ``d`` bits agrees within ``d // m`` bits
  on some chunk, so each hash looks up, per chunk, the buckets of the values within that
  many bits of its own. Wider chunks make buckets emptier and lookups more numerous; the
  layout with the fewest expected operations wins (3 chunks of ~21 bits at a million).
  ``PairFinder.pairs_of`` looks up only some hashes (the new ones) against all.

Pure functions over NumPy arrays: no database here (pipeline.similar stores the pairs
and groups).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import combinations
from math import comb

import numpy as np

HASH_BITS = 64
# Expected pairs of unrelated photos passing by chance, per library (uniform hashes).
CHANCE_PAIR_BUDGET = 200
# A lookup table per chunk has 2**bits entries: 22 bits is 32 MB per table.
_MAX_CHUNK_BITS = 22
# Hashes looked up per vectorised step (bounds the candidate arrays' memory).
_BLOCK = 1 << 18


def chance_pairs(hashes: int, radius: int) -> float:
    """Expected pairs within ``radius`` bits among ``hashes`` uniform random hashes."""
    within = sum(comb(HASH_BITS, i) for i in range(radius + 1)) / (1 << HASH_BITS)
    return hashes * (hashes - 1) / 2 * within


def adaptive_radius(hashes: int, ceiling: int, budget: float = CHANCE_PAIR_BUDGET) -> int:
    """The largest radius up to ``ceiling`` whose chance pairs among ``hashes`` stay
    within ``budget`` (never below a 2-bit radius: re-encodes stay together)."""
    radius = ceiling
    while radius > 2 and chance_pairs(hashes, radius) > budget:
        radius -= 1
    return radius


@dataclass(frozen=True)
class _Layout:
    bounds: tuple[tuple[int, int], ...]  # (shift, bits) per chunk
    flips: int  # bits flipped per chunk lookup


@cache
def _flip_patterns(bits: int, flips: int) -> np.ndarray:
    values = [0]
    for r in range(1, flips + 1):
        values.extend(sum(1 << b for b in chosen) for chosen in combinations(range(bits), r))
    return np.array(values, dtype=np.int64)


def _layout(hashes: int, radius: int) -> _Layout:
    best: tuple[float, _Layout] | None = None
    for chunks in range(1, 9):
        widths = [HASH_BITS // chunks + (1 if i < HASH_BITS % chunks else 0) for i in range(chunks)]
        if max(widths) > _MAX_CHUNK_BITS:
            continue
        flips = radius // chunks
        lookups = sum(comb(max(widths), i) for i in range(flips + 1))
        # Lookups and candidates per hash, and the tables to build.
        cost = hashes * chunks * lookups * (1 + hashes / 2 ** min(widths)) + chunks * 2 ** max(
            widths
        )
        shifts = np.cumsum([0, *widths[:-1]]).tolist()
        layout = _Layout(tuple(zip(shifts, widths, strict=True)), flips)
        if best is None or cost < best[0]:
            best = (cost, layout)
    assert best is not None
    return best[1]


class PairFinder:
    """Every pair of hashes within ``radius`` bits, or those of a few hashes against
    all; ``examined`` counts the candidate pairs compared (the work done)."""

    def __init__(self, hashes: np.ndarray, radius: int) -> None:
        if not 0 <= radius < HASH_BITS:
            raise ValueError(f"radius must be 0..{HASH_BITS - 1}, got {radius!r}")
        self.values = np.ascontiguousarray(hashes, dtype=np.uint64)
        self.radius = radius
        self.layout = _layout(len(self.values), radius)
        self.examined = 0

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(left, right, distance)`` with ``left < right``, each pair once."""
        return self._search(np.arange(len(self.values)), lower_asks=True)

    def pairs_of(self, asking: Iterable[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs (``left < right``, each once) that involve a hash of ``asking``."""
        wanted = np.unique(np.fromiter(asking, dtype=np.int64))
        return self._search(wanted, lower_asks=False)

    def _search(
        self, asking: np.ndarray, *, lower_asks: bool
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        found_left: list[np.ndarray] = []
        found_right: list[np.ndarray] = []
        size = len(self.values)
        if size < 2 or not len(asking):
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, empty
        for shift, bits in self.layout.bounds:
            keys = ((self.values >> np.uint64(shift)) & np.uint64((1 << bits) - 1)).astype(np.int32)
            # A dense table over every chunk value: where its run starts in `order` and
            # how long it is, so a lookup is one gather, not a search.
            order = np.argsort(keys, kind="stable").astype(np.int32)
            counts = np.bincount(keys, minlength=1 << bits).astype(np.int32)
            starts = (np.cumsum(counts) - counts).astype(np.int32)
            # Asking in the order of the chunk's value keeps each pattern's lookups
            # close together in the tables: cache hits, not a miss per lookup (a
            # third less time at a million hashes).
            ordered = asking[np.argsort(keys[asking], kind="stable")]
            for block_start in range(0, len(ordered), _BLOCK):
                block = ordered[block_start : block_start + _BLOCK]
                block_keys = keys[block]
                for pattern in _flip_patterns(bits, self.layout.flips).tolist():
                    wanted = block_keys ^ np.int32(pattern)
                    hits = counts[wanted]
                    # Most lookups find an empty bucket: expand only the others.
                    asked = np.flatnonzero(hits)
                    if not len(asked):
                        continue
                    hits, wanted = hits[asked], wanted[asked]
                    total = int(hits.sum())
                    left = np.repeat(block[asked], hits)
                    offsets = np.arange(total) - np.repeat(np.cumsum(hits) - hits, hits)
                    right = order[np.repeat(starts[wanted], hits) + offsets]
                    # Both sides of a pair ask for each other in a full search: the
                    # lower one keeps it.
                    keep = left < right if lower_asks else left != right
                    left, right = left[keep], right[keep]
                    self.examined += len(left)
                    distance = np.bitwise_count(self.values[left] ^ self.values[right])
                    close = distance <= self.radius
                    found_left.append(left[close])
                    found_right.append(right[close])
        if not found_left:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, empty
        left = np.concatenate(found_left)
        right = np.concatenate(found_right)
        low, high = np.minimum(left, right), np.maximum(left, right)
        # A pair close on several chunks is found once per chunk: keep one.
        unique = np.unique(low * size + high)
        low, high = unique // size, unique % size
        distance = np.bitwise_count(self.values[low] ^ self.values[high]).astype(np.int64)
        return low, high, distance


def star_groups(
    count: int, left: Sequence[int], right: Sequence[int], distance: Sequence[int]
) -> list[list[tuple[int, int]]]:
    """Groups of the nodes ``0..count-1`` (numbered in keeper order: 0 is the best
    to keep) joined by the pairs ``left[i]``-``right[i]``: each group is its keeper
    (distance 0) then its members as ``(node, distance to the keeper)``, by node.
    Every member is a neighbour of its keeper: no chains."""
    neighbours: dict[int, list[tuple[int, int]]] = {}
    for a, b, d in zip(left, right, distance, strict=True):
        neighbours.setdefault(int(a), []).append((int(b), int(d)))
        neighbours.setdefault(int(b), []).append((int(a), int(d)))
    taken: set[int] = set()
    groups = []
    for node in sorted(neighbours):
        if node in taken:
            continue
        members = sorted((other, d) for other, d in neighbours[node] if other not in taken)
        if not members:
            continue
        taken.add(node)
        taken.update(other for other, _ in members)
        groups.append([(node, 0), *members])
    return groups
