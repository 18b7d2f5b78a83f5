"""The map's grid: a position's cell, and the cells a map view covers.

A position is a cell of a Web Mercator grid of ``2**BITS`` × ``2**BITS`` cells (about 2 m
at the equator), stored on its asset as one integer, ``assets.map_cell``: the Morton
(Z-order) code of the cell's x and y, their bits interleaved. The cell of a coarser level
``L`` is the code shifted right by ``2 * (BITS - L)``, so every cell of every level is one
contiguous range of codes: one index on ``map_cell`` answers any cell of any level, and
the summary ``map_cells`` (one row per populated cell of each level up to
:data:`SUMMARY_LEVELS`, kept by triggers of migration 0025) is keyed by the same shifted
code. A view at zoom ``z`` clusters on the cells of level ``z + 2``: about 64 pixels on a
map of 256-pixel tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from photo_pipeline.media.places import valid_position

BITS = 24  # per axis: a 48-bit code
SUMMARY_LEVELS = 16  # levels 0..16 (zoom 14) are counted in map_cells; deeper from assets
MAX_LATITUDE = 85.05112878  # where Web Mercator ends: the poles are its edge
_CELLS = 1 << BITS


def _spread(value: int) -> int:
    """``value``'s 24 bits, each followed by a zero bit."""
    value &= 0xFFFFFF
    value = (value | (value << 16)) & 0x0000FFFF0000FFFF
    value = (value | (value << 8)) & 0x00FF00FF00FF00FF
    value = (value | (value << 4)) & 0x0F0F0F0F0F0F0F0F
    value = (value | (value << 2)) & 0x3333333333333333
    return (value | (value << 1)) & 0x5555555555555555


def _squeeze(value: int) -> int:
    """The inverse of :func:`_spread`: every other bit, from the lowest."""
    value &= 0x5555555555555555
    value = (value | (value >> 1)) & 0x3333333333333333
    value = (value | (value >> 2)) & 0x0F0F0F0F0F0F0F0F
    value = (value | (value >> 4)) & 0x00FF00FF00FF00FF
    value = (value | (value >> 8)) & 0x0000FFFF0000FFFF
    return (value | (value >> 16)) & 0xFFFFFF


def morton(x: int, y: int) -> int:
    return _spread(x) | (_spread(y) << 1)


def unmorton(code: int) -> tuple[int, int]:
    return _squeeze(code), _squeeze(code >> 1)


def mercator(latitude: float, longitude: float) -> tuple[float, float]:
    """Web Mercator x and y in [0, 1]: x east from the antimeridian, y south from the top."""
    lat = math.radians(max(-MAX_LATITUDE, min(MAX_LATITUDE, latitude)))
    x = (longitude + 180.0) / 360.0
    y = (1.0 - math.log(math.tan(math.pi / 4 + lat / 2)) / math.pi) / 2.0
    return min(max(x, 0.0), 1.0), min(max(y, 0.0), 1.0)


def _cell(fraction: float, level: int) -> int:
    cells = 1 << level
    return min(int(fraction * cells), cells - 1)


def map_cell(latitude: float | None, longitude: float | None) -> int | None:
    """The grid cell (at ``BITS``) of a position, or None for no real one (the same test
    as the place lookup's: null island and out-of-range values are none)."""
    position = valid_position(latitude, longitude)
    if position is None:
        return None
    x, y = mercator(*position)
    return morton(_cell(x, BITS), _cell(y, BITS))


def level_for_zoom(zoom: int) -> int:
    return min(zoom + 2, BITS)


def shift(level: int) -> int:
    """How far a full code shifts right to become its cell at ``level``."""
    return 2 * (BITS - level)


@dataclass(frozen=True)
class Box:
    """A view: degrees, south < north; west > east crosses the antimeridian."""

    west: float
    south: float
    east: float
    north: float

    def spans(self) -> list[tuple[float, float]]:
        """The longitude spans, west to east: two when it crosses the antimeridian."""
        if self.east - self.west >= 360:
            return [(-180.0, 180.0)]
        if self.west <= self.east:
            return [(self.west, self.east)]
        return [(self.west, 180.0), (-180.0, self.east)]


@dataclass(frozen=True)
class Cover:
    """The cells of ``level`` a view touches (x spans and a y span, inclusive), and the
    few code ranges at ``level`` holding them (a cover of coarser cells, merged)."""

    level: int
    x_spans: list[tuple[int, int]]
    y_span: tuple[int, int]
    ranges: list[tuple[int, int]]  # codes at ``level``, inclusive

    def holds(self, cell: int) -> bool:
        x, y = unmorton(cell)
        return self.y_span[0] <= y <= self.y_span[1] and any(a <= x <= b for a, b in self.x_spans)

    def full_ranges(self) -> list[tuple[int, int]]:
        """:attr:`ranges` as ranges of full codes (``assets.map_cell``)."""
        s = shift(self.level)
        return [(lo << s, ((hi + 1) << s) - 1) for lo, hi in self.ranges]


_COVER_CELLS = 4  # a view is covered by at most this many coarse cells a side (+1)


def cover(box: Box, level: int) -> Cover:
    _, top = mercator(box.north, 0.0)
    _, bottom = mercator(box.south, 0.0)
    y_span = (_cell(top, level), _cell(bottom, level))
    x_spans = [
        (_cell((west + 180.0) / 360.0, level), _cell((east + 180.0) / 360.0, level))
        for west, east in box.spans()
    ]
    # The coarsest level at which the view spans at most _COVER_CELLS cells each way:
    # a handful of ranges, each a whole coarse cell (the cells outside the view that it
    # brings are dropped by ``holds``).
    widest = max(y_span[1] - y_span[0], *(b - a for a, b in x_spans)) + 1
    up = 0
    while up < level and widest > _COVER_CELLS:
        widest = (widest + 1) // 2 + 1
        up += 1
    codes: set[int] = set()
    for x0, x1 in x_spans:
        for cy in range(y_span[0] >> up, (y_span[1] >> up) + 1):
            for cx in range(x0 >> up, (x1 >> up) + 1):
                codes.add(morton(cx, cy))
    step = 2 * up
    ranges: list[tuple[int, int]] = []
    for code in sorted(codes):
        lo, hi = code << step, ((code + 1) << step) - 1
        if ranges and ranges[-1][1] + 1 == lo:
            ranges[-1] = (ranges[-1][0], hi)
        else:
            ranges.append((lo, hi))
    return Cover(level, x_spans, y_span, ranges)


def cell_bounds(cell: int, level: int) -> tuple[float, float, float, float]:
    """(west, south, east, north) of a cell, in degrees."""
    x, y = unmorton(cell)
    cells = 1 << level

    def latitude(fraction: float) -> float:
        return math.degrees(math.atan(math.sinh(math.pi * (1 - 2 * fraction))))

    return (
        x / cells * 360.0 - 180.0,
        latitude((y + 1) / cells),
        (x + 1) / cells * 360.0 - 180.0,
        latitude(y / cells),
    )
