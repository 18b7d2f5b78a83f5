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
  many bits of its own (its *probes*). Wider chunks make buckets emptier and probes more
  numerous; the layout with the fewest expected operations wins (3 chunks of ~21 bits
  at a million). ``PairFinder.all_pairs`` finds every pair in memory;
  ``Layout.probes`` is what a few new hashes look up in the stored chunks
  (pipeline.near.chunks), and ``PairFinder.pairs_of`` the same lookups in memory.

Pure functions over NumPy arrays: no database here (pipeline.near.similar stores the pairs
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
# A lookup table per chunk has 2**bits entries: 22 bits is 16 MB per table.
_MAX_CHUNK_BITS = 22
# A stored layout is kept while its work stays within this factor of the best one's.
LAYOUT_SLACK = 2.0
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


@cache
def _flip_patterns(bits: int, flips: int) -> np.ndarray:
    """Every ``bits``-bit value with at most ``flips`` bits set, 0 first."""
    values = [0]
    for r in range(1, flips + 1):
        values.extend(sum(1 << b for b in chosen) for chosen in combinations(range(bits), r))
    return np.array(values, dtype=np.int32)


@dataclass(frozen=True)
class Layout:
    """Hashes cut into chunks of ``widths`` bits (lowest bits first); a lookup flips up
    to ``flips`` bits of a chunk."""

    widths: tuple[int, ...]
    flips: int

    @classmethod
    def parse(cls, text: str, radius: int) -> Layout:
        """The layout stored as ``text`` (``"22,21,21"``), for ``radius``."""
        widths = tuple(int(w) for w in text.split(","))
        if sum(widths) != HASH_BITS or not all(0 < w <= _MAX_CHUNK_BITS for w in widths):
            raise ValueError(f"not a chunk layout of {HASH_BITS} bits: {text!r}")
        return cls(widths, radius // len(widths))

    @property
    def text(self) -> str:
        return ",".join(map(str, self.widths))

    def keys(self, values: np.ndarray, chunk: int) -> np.ndarray:
        """Chunk number ``chunk`` of each hash."""
        shift = sum(self.widths[:chunk])
        mask = np.uint64((1 << self.widths[chunk]) - 1)
        return ((values >> np.uint64(shift)) & mask).astype(np.int32)

    def probes(self, values: np.ndarray, chunk: int) -> np.ndarray:
        """The chunk values each hash looks up (one row per hash): its own chunk with
        up to ``flips`` bits flipped. A hash within the radius of another shares one
        of these with it on some chunk."""
        patterns = _flip_patterns(self.widths[chunk], self.flips)
        probes: np.ndarray = self.keys(values, chunk)[:, None] ^ patterns[None, :]
        return probes

    @property
    def lookups(self) -> int:
        """Probes per hash, all chunks together."""
        return sum(len(_flip_patterns(width, self.flips)) for width in self.widths)

    def cost(self, hashes: int) -> float:
        """Expected work of pairing ``hashes`` hashes: every probe, the candidates
        its bucket holds, and the tables to build."""
        candidates = hashes / (1 << min(self.widths))
        tables = len(self.widths) << max(self.widths)
        return hashes * self.lookups * (1 + candidates) + tables


def layout_fits(layout: Layout, hashes: int, radius: int) -> bool:
    """Whether a stored ``layout`` still serves ``hashes`` hashes at ``radius``: its
    work within ``LAYOUT_SLACK`` times the best layout's. A library that grows past
    it (its buckets fill up) is cut again once, not at every change of best layout."""
    kept = Layout(layout.widths, radius // len(layout.widths))
    return kept.cost(hashes) <= LAYOUT_SLACK * layout_for(hashes, radius).cost(hashes)


def layout_for(hashes: int, radius: int) -> Layout:
    """The chunk layout with the least expected work for ``hashes`` hashes and
    ``radius`` (tables of at most 2**22 entries)."""
    layouts = []
    for chunks in range(1, 9):
        widths = [HASH_BITS // chunks + (1 if i < HASH_BITS % chunks else 0) for i in range(chunks)]
        if max(widths) <= _MAX_CHUNK_BITS:
            layouts.append(Layout(tuple(widths), radius // chunks))
    return min(layouts, key=lambda layout: layout.cost(hashes))


class PairFinder:
    """Every pair of hashes within ``radius`` bits, or those of a few hashes against
    all; ``examined`` counts the candidate pairs compared (the work done)."""

    def __init__(self, hashes: np.ndarray, radius: int, layout: Layout | None = None) -> None:
        if not 0 <= radius < HASH_BITS:
            raise ValueError(f"radius must be 0..{HASH_BITS - 1}, got {radius!r}")
        self.values = np.ascontiguousarray(hashes, dtype=np.uint64)
        self.radius = radius
        self.layout = layout or layout_for(len(self.values), radius)
        if self.layout.flips * len(self.layout.widths) + len(self.layout.widths) <= radius:
            raise ValueError(f"layout {self.layout} misses pairs at radius {radius}")
        self.examined = 0

    def all_pairs(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(left, right, distance)`` with ``left < right``, each pair once."""
        found: list[np.ndarray] = []
        if len(self.values) > 1:
            for chunk in range(len(self.layout.widths)):
                found.extend(self._chunk_pairs(chunk))
        return self._distinct(found)

    def pairs_of(self, asking: Iterable[int]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The pairs (``left < right``, each once) that involve a hash of ``asking``:
        each looks up its probes (``Layout.probes``) in a sorted copy of every chunk."""
        wanted = np.unique(np.fromiter(asking, dtype=np.int64))
        found: list[np.ndarray] = []
        for chunk in range(len(self.layout.widths)):
            keys = self.layout.keys(self.values, chunk)
            order = np.argsort(keys, kind="stable")
            ordered = keys[order]
            probes = self.layout.probes(self.values[wanted], chunk)
            first = np.searchsorted(ordered, probes, side="left").ravel()
            hits = np.searchsorted(ordered, probes, side="right").ravel() - first
            asker = np.repeat(np.repeat(wanted, probes.shape[1]), hits)
            other = order[expand(first, hits)]
            keep = asker != other
            found.append(self._close(asker[keep], other[keep]))
        return self._distinct(found)

    def _chunk_pairs(self, chunk: int) -> list[np.ndarray]:
        """The close pairs that agree within ``flips`` bits on chunk ``chunk``, each
        once, as original indices (rows of a 2-column array)."""
        bits = self.layout.widths[chunk]
        keys = self.layout.keys(self.values, chunk)
        # Work in the chunk's sorted order: a bucket is a run, the hashes being
        # compared lie close together in memory, and only the close pairs found are
        # mapped back to the original indices.
        order = np.argsort(keys, kind="stable").astype(np.int32)
        keys, values = keys[order], self.values[order]
        counts = np.bincount(keys, minlength=1 << bits).astype(np.int32)
        starts = (np.cumsum(counts) - counts).astype(np.int32)
        found = []
        # Pairs in one bucket: each position with the later ones of its run.
        position = np.arange(len(keys), dtype=np.int32)
        later = starts[keys] + counts[keys] - position - 1
        left, right = self._close_positions(values, position, later, position + 1)
        found.append(np.stack([order[left], order[right]], axis=1))
        # A pattern's highest bit is clear in exactly one side of a pair it joins:
        # that side asks, so each pair is found once per chunk, half the lookups.
        patterns = _flip_patterns(bits, self.layout.flips)[1:]
        highest = np.log2(patterns).astype(np.int32)  # patterns hold 1..flips bits
        for top in range(bits):
            mine = patterns[highest == top]
            if not len(mine):
                continue
            asking = np.flatnonzero(((keys >> top) & 1) == 0).astype(np.int32)
            for block_start in range(0, len(asking), _BLOCK):
                block = asking[block_start : block_start + _BLOCK]
                block_keys = keys[block]
                for pattern in mine.tolist():
                    wanted = block_keys ^ np.int32(pattern)
                    hits = counts[wanted]
                    # Most lookups find an empty bucket: expand only the others.
                    asked = np.flatnonzero(hits)
                    left, right = self._close_positions(
                        values, block[asked], hits[asked], starts[wanted[asked]]
                    )
                    found.append(np.stack([order[left], order[right]], axis=1))
        return found

    def _close_positions(
        self, values: np.ndarray, asker: np.ndarray, hits: np.ndarray, first: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Of ``asker[i]`` against positions ``first[i] .. first[i] + hits[i] - 1``,
        the pairs of positions within the radius."""
        single = hits == 1  # most hit buckets hold one hash: no expansion
        many = np.flatnonzero(~single)
        lefts = [asker[single], np.repeat(asker[many], hits[many])]
        rights = [first[single], expand(first[many], hits[many])]
        close_left, close_right = [], []
        for left, right in zip(lefts, rights, strict=True):
            self.examined += len(left)
            close = np.flatnonzero(np.bitwise_count(values[left] ^ values[right]) <= self.radius)
            close_left.append(left[close])
            close_right.append(right[close])
        return np.concatenate(close_left), np.concatenate(close_right)

    def _close(self, left: np.ndarray, right: np.ndarray) -> np.ndarray:
        self.examined += len(left)
        close = np.bitwise_count(self.values[left] ^ self.values[right]) <= self.radius
        return np.stack([left[close], right[close]], axis=1)

    def _distinct(self, found: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each pair once (a pair close on several chunks is found once per chunk),
        lower index first, with its distance."""
        if not found:
            empty = np.empty(0, dtype=np.int64)
            return empty, empty, empty
        pairs = np.concatenate(found).astype(np.int64)
        low, high = pairs.min(axis=1), pairs.max(axis=1)
        unique = np.unique(low * len(self.values) + high)
        low, high = unique // len(self.values), unique % len(self.values)
        distance = np.bitwise_count(self.values[low] ^ self.values[high]).astype(np.int64)
        return low, high, distance


def expand(first: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``first[i], first[i] + 1, ..., first[i] + counts[i] - 1`` for every ``i``, in
    one array (the positions of runs in a sorted array)."""
    total = int(counts.sum())
    if not total:
        return np.empty(0, dtype=first.dtype)
    offsets = np.arange(total) - np.repeat(np.cumsum(counts) - counts, counts)
    positions: np.ndarray = (np.repeat(first, counts) + offsets).astype(first.dtype)
    return positions


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
