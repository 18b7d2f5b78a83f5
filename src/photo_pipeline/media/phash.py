"""Perceptual hashes and finding near-identical ones without comparing every pair.

The hash is the classic 64-bit DCT pHash: the image in grey at 32x32, its 2-D DCT, and
one bit per low-frequency coefficient (the top-left 8x8) saying whether it lies above
their median. Resizing, re-encoding and light crops move few bits; different scenes
differ in about half of them.

``near_pairs`` is multi-index hashing: split each hash into 4 chunks of 16 bits. Two
hashes within Hamming distance ``d`` agree within ``d // 4`` bits on at least one chunk
(pigeonhole), so it is enough to look, per chunk, at the hashes whose chunk lies within
that small radius: one table lookup per flip pattern (137 patterns for ``d`` up to
11, 697 up to 15), vectorised with NumPy over all hashes at once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import cache
from itertools import combinations
from pathlib import Path

import numpy as np
import pyvips

HASH_BITS = 64
_CHUNKS = 4
_CHUNK_BITS = HASH_BITS // _CHUNKS
_SIDE = 32
_LOW = 8


@cache
def _dct_matrix() -> np.ndarray:
    """The orthonormal DCT-II matrix of size 32."""
    n = np.arange(_SIDE)
    matrix = np.cos(np.pi * (2 * n[None, :] + 1) * n[:, None] / (2 * _SIDE))
    matrix[0] /= np.sqrt(2)
    scaled: np.ndarray = matrix * np.sqrt(2 / _SIDE)
    return scaled


def perceptual_hash(image: pyvips.Image) -> int:
    """The 64-bit pHash of an image (already oriented; any size, bands or format)."""
    if image.hasalpha():
        image = image.flatten(background=[255] * (image.bands - 1))
    grey = image.colourspace("b-w").extract_band(0).cast("uchar")
    small = grey.thumbnail_image(_SIDE, height=_SIDE, size="force")
    pixels = np.ndarray(
        buffer=small.write_to_memory(), dtype=np.uint8, shape=(small.height, small.width)
    ).astype(np.float64)
    dct = _dct_matrix()
    low = (dct @ pixels @ dct.T)[:_LOW, :_LOW].ravel()
    bits = low > np.median(low)
    return int(sum(1 << i for i, bit in enumerate(bits[::-1]) if bit))


def perceptual_hash_file(path: Path | str) -> int:
    """The pHash of an image file as stored (a thumbnail: no orientation applied)."""
    return perceptual_hash(pyvips.Image.new_from_file(str(path), access="sequential"))


def to_text(value: int) -> str:
    """16 hex digits, as stored in ``assets.phash``."""
    return f"{value:016x}"


def from_text(text: str) -> int:
    return int(text, 16)


def distance(a: int, b: int) -> int:
    """Hamming distance of two hashes."""
    return (a ^ b).bit_count()


@cache
def _flip_patterns(radius: int) -> np.ndarray:
    """Every 16-bit value with at most ``radius`` bits set."""
    patterns = [0]
    for r in range(1, radius + 1):
        for bits in combinations(range(_CHUNK_BITS), r):
            patterns.append(sum(1 << b for b in bits))
    return np.array(patterns, dtype=np.uint64)


def near_pairs(hashes: Sequence[int], max_distance: int) -> Iterator[tuple[int, int, int]]:
    """Yield ``(i, j, distance)`` with ``i < j`` for every pair of ``hashes`` within
    ``max_distance`` of each other, each pair once."""
    if not 0 <= max_distance < HASH_BITS:
        raise ValueError(f"max_distance must be 0..{HASH_BITS - 1}, got {max_distance!r}")
    values = np.array([h & (2**HASH_BITS - 1) for h in hashes], dtype=np.uint64)
    if len(values) < 2:
        return
    # Equal hashes are grouped first: a thousand identical photos cost one lookup.
    unique, inverse = np.unique(values, return_inverse=True)
    members: dict[int, list[int]] = {}
    for index, slot in enumerate(inverse.tolist()):
        members.setdefault(slot, []).append(index)
    for same in members.values():
        for a, b in combinations(same, 2):
            yield a, b, 0
    for slot_a, slot_b, dist in _unique_pairs(unique, max_distance):
        for a in members[slot_a]:
            for b in members[slot_b]:
                yield (a, b, dist) if a < b else (b, a, dist)


def _unique_pairs(values: np.ndarray, max_distance: int) -> Iterator[tuple[int, int, int]]:
    """Pairs of distinct hashes within ``max_distance`` (multi-index hashing)."""
    patterns = _flip_patterns(max_distance // _CHUNKS)
    found: set[tuple[int, int]] = set()
    everyone = np.arange(len(values))
    for chunk in range(_CHUNKS):
        keys = ((values >> np.uint64(chunk * _CHUNK_BITS)) & np.uint64(0xFFFF)).astype(np.int64)
        # A dense table over all 2^16 chunk values: where each value's run starts in
        # `order` and how long it is. A lookup is then one gather, not a search.
        order = np.argsort(keys, kind="stable")
        counts = np.bincount(keys, minlength=1 << _CHUNK_BITS)
        starts = np.cumsum(counts) - counts
        for pattern in patterns.astype(np.int64):
            wanted = keys ^ pattern
            # A pair of buckets is met from both sides: only the lower one asks.
            asking = everyone if pattern == 0 else everyone[wanted > keys]
            wanted = wanted[asking]
            hits = counts[wanted]
            total = int(hits.sum())
            if not total:
                continue
            left = np.repeat(asking, hits)
            offsets = np.arange(total) - np.repeat(np.cumsum(hits) - hits, hits)
            right = order[np.repeat(starts[wanted], hits) + offsets]
            if pattern == 0:
                keep = left < right
                left, right = left[keep], right[keep]
            else:
                left, right = np.minimum(left, right), np.maximum(left, right)
            dist = np.bitwise_count(values[left] ^ values[right])
            close = dist <= max_distance
            for a, b, d in zip(
                left[close].tolist(), right[close].tolist(), dist[close].tolist(), strict=True
            ):
                if (a, b) not in found:
                    found.add((a, b))
                    yield a, b, d


def groups(hashes: Sequence[int], max_distance: int) -> list[list[int]]:
    """Indexes of ``hashes`` joined into groups by chains of near pairs (connected
    components); only groups of two or more, each sorted, largest first."""
    parent = list(range(len(hashes)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for a, b, _ in near_pairs(hashes, max_distance):
        ra, rb = root(a), root(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    by_root: dict[int, list[int]] = {}
    for i in range(len(hashes)):
        by_root.setdefault(root(i), []).append(i)
    found = [members for members in by_root.values() if len(members) > 1]
    return sorted(found, key=lambda members: (-len(members), members[0]))
