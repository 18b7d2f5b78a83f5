"""Walk ISO-BMFF / QuickTime boxes: the few facts FFmpeg (PyAV) does not hand over.

* ``display_rotation``: the clockwise turn a player applies to the first video track
  (its ``tkhd`` matrix). PyAV exposes the display matrix only on decoded frames, and
  metadata must not decode.
* ``find_box``: the payload of a nested box (CR3 keeps its EXIF in
  ``moov/uuid/CMT1…CMT4``).
* ``cut_short``: whether the file ends inside a box (a HEIF cut short: libheif opens
  one lazily, so opening no longer says).

Reads only box headers and the few payloads asked for, by seeking: a 4 GB file costs a
handful of reads. Every walk is bounded (box count, depth), so a damaged file ends it.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

_MAX_BOXES = 4096  # per level: real files have a few dozen
# Canon's CR3 metadata box: a uuid box with this id holds CMT1..CMT4 (TIFF blocks).
CANON_UUID = bytes.fromhex("85c0b687820f11e08111f4ce462b6a48")


@dataclass(frozen=True)
class Box:
    type: bytes
    start: int  # of the header
    payload: int  # offset of the payload (after size, type and, for uuid, the 16-byte id)
    end: int
    uuid: bytes | None = None


def iter_boxes(fp: BinaryIO, start: int, end: int) -> Iterator[Box]:
    """The boxes laid end to end in ``[start, end)``; stops at the first damaged header."""
    position = start
    for _ in range(_MAX_BOXES):
        if end - position < 8:
            return
        fp.seek(position)
        header = fp.read(16)
        if len(header) < 8:
            return
        size, kind = struct.unpack(">I4s", header[:8])
        payload = position + 8
        if size == 1:  # 64-bit size follows the type
            if len(header) < 16:
                return
            size = struct.unpack(">Q", header[8:16])[0]
            payload += 8
        elif size == 0:  # extends to the end of the enclosing box or file
            size = end - position
        if size < payload - position or position + size > end:
            return
        uuid = None
        if kind == b"uuid":
            fp.seek(payload)
            uuid = fp.read(16)
            payload += 16
        yield Box(kind, position, payload, position + size, uuid)
        position += size


def cut_short(fp: BinaryIO, file_size: int) -> bool:
    """Whether a top-level box runs past the end of the file: a file cut short (a copy
    or an upload that stopped). Fewer than 8 bytes after the last box are padding; a
    damaged header is left to the decoder."""
    position = 0
    for _ in range(_MAX_BOXES):
        if file_size - position < 8:
            return False
        fp.seek(position)
        header = fp.read(16)
        size = struct.unpack(">I", header[:4])[0]
        if size == 1:  # 64-bit size follows the type
            if len(header) < 16:
                return True
            size = struct.unpack(">Q", header[8:16])[0]
        elif size == 0:  # to the end of the file
            return False
        if size < 8:
            return False
        if position + size > file_size:
            return True
        position += size
    return False


def find_box(fp: BinaryIO, file_size: int, path: tuple[bytes, ...]) -> Box | None:
    """The first box at ``path`` (e.g. ``(b"moov", b"trak")``); ``b"uuid:<hex>"`` matches
    a uuid box by its id."""
    start, end = 0, file_size
    found: Box | None = None
    for step in path:
        found = None
        for box in iter_boxes(fp, start, end):
            if _matches(box, step):
                found = box
                break
        if found is None:
            return None
        start, end = found.payload, found.end
    return found


def _matches(box: Box, step: bytes) -> bool:
    if step.startswith(b"uuid:"):
        return box.type == b"uuid" and box.uuid == bytes.fromhex(step[5:].decode())
    return box.type == step


def display_rotation(fp: BinaryIO, file_size: int) -> int:
    """Clockwise degrees (0, 90, 180 or 270) that the first video track is turned by to
    display; 0 when there is no such track or no readable matrix."""
    moov = find_box(fp, file_size, (b"moov",))
    if moov is None:
        return 0
    for trak in iter_boxes(fp, moov.payload, moov.end):
        if trak.type != b"trak":
            continue
        children = {box.type: box for box in iter_boxes(fp, trak.payload, trak.end)}
        mdia, tkhd = children.get(b"mdia"), children.get(b"tkhd")
        if mdia is None or tkhd is None or _handler(fp, mdia) != b"vide":
            continue
        return _tkhd_rotation(fp, tkhd)
    return 0


def _handler(fp: BinaryIO, mdia: Box) -> bytes | None:
    for box in iter_boxes(fp, mdia.payload, mdia.end):
        if box.type == b"hdlr":
            fp.seek(box.payload + 8)  # version/flags, pre_defined
            return fp.read(4)
    return None


def _tkhd_rotation(fp: BinaryIO, tkhd: Box) -> int:
    fp.seek(tkhd.payload)
    version = fp.read(1)
    # version 0: 4-byte times and duration; version 1: 8-byte ones
    matrix_at = tkhd.payload + (40 if version == b"\x00" else 52)
    if matrix_at + 36 > tkhd.end:
        return 0
    fp.seek(matrix_at)
    a, b = struct.unpack(">ii", fp.read(8))  # 16.16 fixed point: [a b u; c d v; x y w]
    if a == 0 and b == 0:
        return 0
    # FFmpeg's av_display_rotation_get is -atan2(b, a) (counter-clockwise); players turn
    # the frame clockwise by atan2(b, a), so an iPhone portrait clip (b = 1) is 90
    degrees = math.degrees(math.atan2(b, a))
    return round(degrees / 90) % 4 * 90


def read_payload(fp: BinaryIO, box: Box, limit: int) -> bytes | None:
    """A box's payload, or None when it is larger than ``limit`` bytes."""
    if box.end - box.payload > limit:
        return None
    fp.seek(box.payload)
    return fp.read(box.end - box.payload)
