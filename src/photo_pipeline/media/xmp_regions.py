"""People in XMP: face regions as the Metadata Working Group's region schema holds
them (``mwg-rs:Regions``, exiftool's ``XMP-mwg-rs:RegionInfo``), as Lightroom, digiKam
and Picasa write them, and Microsoft's ``MP:RegionInfo`` (MPRI) read where a sidecar
has no MWG regions. No database, no job: ``pipeline.xmp.regions`` decides.

An MWG area is a box's centre and size in fractions of the image *as stored* (before
its EXIF orientation is applied: Lightroom does not recognise a region turned with the
photo, and digiKam turns them back), ``unit=normalized``; ``AppliedToDimensions`` is
the stored image's size in pixels. An MP rectangle is ``left, top, width, height`` in
fractions of the same frame. Faces here are stored as fractions of the upright
preview: :func:`to_stored` and :func:`to_upright` turn a box between the two frames.

What is ours in a sidecar's region list: a named region of type ``Face`` (or no type)
that overlaps a face the catalogue holds (:data:`MATCH_OVERLAP`), and an unnamed one
under a name we write. A write replaces those with the catalogue's named faces and
keeps every other region as it was read (another program's pets, focus areas, faces
we did not find).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

REGION_TAG = "XMP-mwg-rs:RegionInfo"
MP_TAG = "XMP-MP:RegionInfoMP"
READ_ARGS = (f"-{REGION_TAG}", f"-{MP_TAG}")
FACE = "Face"
# Two boxes are one face when their intersection over union is at least this. On the
# test photos (``python -m bench.region_overlap``: 11 faces in 6 photos) one face found
# in a photo and in a copy at 60 % overlapped by 0.69 at least, a dlib box and the same
# box half as wide again and as tall (Lightroom's and digiKam's take in more of the
# head) by 0.44, and two faces of one photo by 0.00 at most.
MATCH_OVERLAP = 0.3
_DIGITS = 6

Box = tuple[float, float, float, float]  # left, top, width, height: fractions


@dataclass(frozen=True)
class Region:
    """One region: its name (None: unnamed), type, and box (left, top, width,
    height) in fractions of the stored image."""

    name: str | None
    box: Box
    kind: str = FACE

    @property
    def is_named_face(self) -> bool:
        return bool(self.name) and self.kind.casefold() == FACE.casefold()

    def record(self) -> dict[str, Any]:
        """As remembered (``xmp_sidecars.fields['regions']``): name and MWG area."""
        left, top, width, height = self.box
        return {
            "name": self.name,
            "x": round(left + width / 2, 4),
            "y": round(top + height / 2, 4),
            "w": round(width, 4),
            "h": round(height, 4),
        }

    def mwg(self) -> dict[str, Any]:
        """The region as an MWG ``RegionList`` item (exiftool's structure)."""
        left, top, width, height = self.box
        item: dict[str, Any] = {
            "Area": {
                "X": round(left + width / 2, _DIGITS),
                "Y": round(top + height / 2, _DIGITS),
                "W": round(width, _DIGITS),
                "H": round(height, _DIGITS),
                "Unit": "normalized",
            },
            "Type": self.kind,
        }
        if self.name:
            item["Name"] = self.name
        return item


@dataclass(frozen=True)
class Regions:
    """The regions of a sidecar as read: each with its MWG item as exiftool read it
    (None for an MP one), and the dimensions the MWG list applies to."""

    regions: tuple[tuple[Region, dict[str, Any] | None], ...] = ()
    dimensions: dict[str, Any] | None = None

    def named_faces(self) -> list[Region]:
        return [region for region, _item in self.regions if region.is_named_face]

    def record(self) -> list[dict[str, Any]]:
        """The named faces as remembered, in a stable order."""
        return records(self.named_faces())


def records(regions: Iterable[Region]) -> list[dict[str, Any]]:
    return sorted(
        (region.record() for region in regions if region.is_named_face),
        key=lambda r: (str(r["name"]).casefold(), r["x"], r["y"]),
    )


def parse_regions(found: dict[str, Any]) -> Regions:
    """The regions in exiftool's answer (``-G0:1 -struct -n``) to :data:`READ_ARGS`:
    the MWG list, else the MP one."""
    info = found.get(f"XMP:{REGION_TAG}")
    if isinstance(info, dict):
        parsed = []
        for item in tag_list(info.get("RegionList")):
            region = _mwg_region(item) if isinstance(item, dict) else None
            if region is not None:
                parsed.append((region, item))
        dimensions = info.get("AppliedToDimensions")
        return Regions(tuple(parsed), dimensions if isinstance(dimensions, dict) else None)
    mp = found.get(f"XMP:{MP_TAG}")
    if isinstance(mp, dict):
        mp_regions = (_mp_region(item) for item in tag_list(mp.get("Regions")))
        return Regions(tuple((region, None) for region in mp_regions if region is not None))
    return Regions()


def _mwg_region(item: dict[str, Any]) -> Region | None:
    area = item.get("Area")
    if not isinstance(area, dict):
        return None
    unit = str(area.get("Unit", "normalized")).casefold()
    values = [tag_number(area.get(key)) for key in ("X", "Y", "W", "H")]
    if unit != "normalized" or any(v is None for v in values):
        return None  # a point, a circle's centre only, or pixels: not a face box
    x, y, w, h = (float(v or 0.0) for v in values)
    if not (w > 0 and h > 0):
        return None
    name = item.get("Name")
    kind = item.get("Type")
    return Region(
        str(name).strip() or None if name is not None else None,
        (x - w / 2, y - h / 2, w, h),
        str(kind) if isinstance(kind, str) and kind else FACE,
    )


def _mp_region(item: object) -> Region | None:
    if not isinstance(item, dict):
        return None
    name = item.get("PersonDisplayName")
    try:
        left, top, width, height = (float(v) for v in str(item.get("Rectangle")).split(","))
    except ValueError:
        return None
    if not (width > 0 and height > 0):
        return None
    return Region(
        str(name).strip() or None if name is not None else None, (left, top, width, height)
    )


def overlap(a: Box, b: Box) -> float:
    """Intersection over union of two boxes."""
    width = min(a[0] + a[2], b[0] + b[2]) - max(a[0], b[0])
    height = min(a[1] + a[3], b[1] + b[3]) - max(a[1], b[1])
    if width <= 0 or height <= 0:
        return 0.0
    shared = width * height
    return shared / (a[2] * a[3] + b[2] * b[3] - shared)


def match(regions: Sequence[Box], boxes: Sequence[Box]) -> dict[int, int]:
    """Each region's face (index -> index), one to one, the largest overlaps first,
    none below :data:`MATCH_OVERLAP`."""
    pairs = sorted(
        (
            (overlap(region, box), r, b)
            for r, region in enumerate(regions)
            for b, box in enumerate(boxes)
        ),
        reverse=True,
    )
    found: dict[int, int] = {}
    taken: set[int] = set()
    for share, r, b in pairs:
        if share < MATCH_OVERLAP:
            break
        if r not in found and b not in taken:
            found[r] = b
            taken.add(b)
    return found


@dataclass(frozen=True)
class WantedRegions:
    """What the catalogue says of an asset's faces: ``named`` (the regions to write),
    ``held`` (the boxes of every face it holds: a sidecar region over one is ours to
    replace) and ``dimensions`` (the stored image's width and height in pixels)."""

    named: tuple[Region, ...]
    held: tuple[Box, ...]
    dimensions: tuple[int, int]

    def merged(self, found: Regions) -> list[tuple[Region, dict[str, Any] | None]]:
        """The region list a write makes of ``found``: every region that is not a face
        over one of ours kept as read, then our named faces."""
        kept = []
        ours = list(self.named)
        for region, item in found.regions:
            if item is None:
                continue  # an MP region: that list is left as it is
            same = self._same(region, ours)
            if same is not None:
                ours.remove(same)  # the name there already: its box and fields stay
            elif region.kind.casefold() == FACE.casefold() and self._replaces(region):
                continue
            kept.append((region, item))
        return [*kept, *((region, None) for region in ours)]

    @staticmethod
    def _same(region: Region, ours: list[Region]) -> Region | None:
        """Our named face that ``region`` already is (its name, over it)."""
        if not region.is_named_face:
            return None
        for named in ours:  # the same spelling: a new one is written anew
            if named.name == region.name and (overlap(region.box, named.box) >= MATCH_OVERLAP):
                return named
        return None

    def _replaces(self, region: Region) -> bool:
        """A named face over a face we hold is ours to decide; an unnamed one gives
        way only to a name we write over it (never two boxes on one face)."""
        boxes = self.held if region.name else tuple(named.box for named in self.named)
        return any(overlap(region.box, box) >= MATCH_OVERLAP for box in boxes)

    def assignments(self, found: Regions) -> list[str]:
        """exiftool's arguments that make the sidecar's MWG regions :meth:`merged`;
        none when its named faces would not change."""
        merged = self.merged(found)
        if records(r for r, _ in merged) == found.record() and len(merged) == len(
            [i for _r, i in found.regions if i is not None]
        ):
            return []
        if not merged:
            return [f"-{REGION_TAG}="]
        width, height = self.dimensions
        dimensions = found.dimensions or {"W": width, "H": height, "Unit": "pixel"}
        structure = {
            "AppliedToDimensions": dimensions,
            "RegionList": [item if item is not None else region.mwg() for region, item in merged],
        }
        return [f"-{REGION_TAG}={serialized(structure)}"]

    def expected(self, found: Regions) -> list[dict[str, Any]]:
        """The named faces the sidecar holds once written."""
        return records(region for region, _item in self.merged(found))


def serialized(value: object) -> str:
    """``value`` in exiftool's structure syntax (``{A=1,B=[x,y]}``, ``|`` escapes)."""
    if isinstance(value, dict):
        return "{" + ",".join(f"{key}={serialized(v)}" for key, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(serialized(v) for v in value) + "]"
    if isinstance(value, bool):
        return "True" if value else "False"
    text = str(value)
    for char in "|,{}[]":
        text = text.replace(char, "|" + char)
    return text


def to_stored(box: Box, orientation: int) -> Box:
    """A box on the upright image as fractions of the image as stored (EXIF
    ``orientation`` 1-8; anything else taken as 1)."""
    left, top, width, height = box
    x, y = left + width / 2, top + height / 2
    # display (x, y) -> stored (x, y), the inverse of each orientation's turn
    x, y = {
        2: (1 - x, y),
        3: (1 - x, 1 - y),
        4: (x, 1 - y),
        5: (y, x),
        6: (y, 1 - x),
        7: (1 - y, 1 - x),
        8: (1 - y, x),
    }.get(orientation, (x, y))
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    return (x - width / 2, y - height / 2, width, height)


def to_upright(box: Box, orientation: int) -> Box:
    """The inverse of :func:`to_stored`."""
    left, top, width, height = box
    x, y = left + width / 2, top + height / 2
    x, y = {
        2: (1 - x, y),
        3: (1 - x, 1 - y),
        4: (x, 1 - y),
        5: (y, x),
        6: (1 - y, x),
        7: (1 - y, 1 - x),
        8: (y, 1 - x),
    }.get(orientation, (x, y))
    if orientation in (5, 6, 7, 8):
        width, height = height, width
    return (x - width / 2, y - height / 2, width, height)


def stored_size(width: int, height: int, orientation: int) -> tuple[int, int]:
    """The stored image's size from its upright one."""
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)


def tag_number(value: object) -> float | None:
    """An exiftool value as a number (None: not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        return float(value)
    except ValueError:
        return None


def tag_list(value: object) -> list[Any]:
    """An exiftool value that may be one item or a list, as a list."""
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]
