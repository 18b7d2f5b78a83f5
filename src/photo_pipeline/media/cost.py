"""What decoding a file will cost in memory, from its header alone.

``render_cost(path)`` estimates the peak bytes ``media.render.render_file`` adds to the
process decoding ``path``; ``check_cost(path)`` those of ``media.metadata.read_metadata``
(which decodes only a JPEG, to verify it). Both read a few hundred bytes to a few
header segments and decode nothing: a worker weighs every item before it starts one
(``jobs.budget``), and a file that cannot be read costs next to nothing (it fails).

The figures follow from how this project decodes, and were measured (peak RSS over
the process's own, ``/proc/self/status`` VmHWM after a reset) on 12- to 192-MP files;
bench/memory.py prints them against the estimates:

* JPEG, one interleaved scan (baseline): libjpeg streams it at a DCT scale of up to
  1/8, so the cost is that of the scaled image: 30-40 MiB whatever its size.
* JPEG, several scans (progressive, or components in scans of their own): libjpeg keeps
  every DCT coefficient of the image until the last scan, 128 bytes a block, whatever
  the scale: 3 bytes a pixel in 4:2:0, 6 in 4:4:4, 2 in grey. A 196-MP progressive
  JPEG: 560 MiB for the coefficients alone.
* PNG and TIFF stream through libvips' shrink (under 40 MiB and 0.75 bytes a pixel);
  an interlaced PNG is decoded whole first.
* WebP: lossy ones decode scaled; lossless ones whole (ARGB, 4 bytes a pixel).
* HEIF and AVIF have no scaled decode: libheif's planes and the RGB image libvips
  reads in place come to 4.5 bytes a pixel (HEIF, through pillow-heif), libvips' own
  AVIF decode to 15.
* Camera RAWs: the worst case, a half-size LibRaw development (the mosaic and a
  16-bit image: 4.5 bytes a sensor pixel), though most render from their embedded
  preview for much less. Sensor pixels come from the largest TIFF directory, or, for
  RAWs of other containers (CR3, RAF), from the file's size (their data runs 0.7-2
  bytes a pixel; one and a half pixels a byte is assumed).
* Videos: a poster frame decoded in a child process, a constant (142 MiB measured for
  a 4K H.264 clip); their metadata probe, in a child as well, another (20 MiB).

Images above ``max_pixels`` are refused before any decode and cost the floor.
"""

from __future__ import annotations

import math
import os
import stat
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from photo_pipeline.media.errors import MediaError
from photo_pipeline.media.files import open_original
from photo_pipeline.media.formats import HEADER_SIZE, RAW_FORMATS, VIDEO_FORMATS, sniff
from photo_pipeline.media.isobmff import iter_boxes
from photo_pipeline.media.limits import DEFAULT_MAX_PIXELS

MIB = 1 << 20
# An item that decodes next to nothing: a header, a hash's buffer, Python objects.
FLOOR = 8 * MIB
# libvips' thumbnail pipeline around any decode: line buffers, threads' regions.
_PIPELINE = 32 * MIB
_STREAM = 40 * MIB  # the same, with libvips' line cache of a streamed (sequential) read
_VIDEO = 160 * MIB
_VIDEO_PROBE = 24 * MIB
_DEFAULT_SIZE = 1440  # the largest rendition's long edge (media.render's preview)
# Formats decoded whole at full size: the fixed part, and bytes a pixel (8-bit RGB).
_FULL_SIZE = {"heif": (16 * MIB, 4.6), "avif": (FLOOR, 16.0)}
_RAW_DEVELOP = 4.5  # bytes a sensor pixel
_STREAMED = 0.75  # bytes a pixel through libvips' shrink (8-bit RGB)
_COEFFICIENT_BLOCK = 64 * 2  # a DCT block of 16-bit coefficients
_CFA_PHOTOMETRICS = frozenset({32803, 34892})  # CFA, LinearRaw


@dataclass(frozen=True)
class _Header:
    """What a cost depends on, as read from a header."""

    kind: str
    width: int = 0
    height: int = 0
    bytes_per_pixel: float = 3.0  # decoded: channels x bytes per sample
    whole: int = 0  # bytes a decoder must hold at once, whatever the scale (JPEG)
    full_decode: bool = False  # no scaled or streamed decode (interlaced, lossless)
    raw: bool = False  # camera sensor data, developed by LibRaw
    exact: bool = True  # the size was read, not inferred (from a file's size)

    @property
    def pixels(self) -> int:
        return self.width * self.height


def render_cost(
    path: Path | str, *, size: int = _DEFAULT_SIZE, max_pixels: int = DEFAULT_MAX_PIXELS
) -> int:
    """Peak bytes of rendering ``path`` with a largest rendition of ``size`` pixels."""
    header = _read_header(path)
    if header is None or (header.exact and header.pixels > max_pixels):
        return FLOOR  # unreadable, or refused before any decode
    if header.kind in VIDEO_FORMATS:
        return _VIDEO
    if header.raw:
        return FLOOR + math.ceil(_RAW_DEVELOP * header.pixels)
    if header.kind in _FULL_SIZE:
        fixed, per_pixel = _FULL_SIZE[header.kind]
        return fixed + math.ceil(per_pixel * header.bytes_per_pixel / 3.0 * header.pixels)
    if header.kind in ("jpeg", "webp") and not header.full_decode:
        return _PIPELINE + header.whole + _scaled_bytes(header, size)
    if header.full_decode:
        return _PIPELINE + math.ceil(1.15 * header.bytes_per_pixel * header.pixels)
    return _STREAM + math.ceil(_STREAMED * header.bytes_per_pixel / 3.0 * header.pixels)


def check_cost(path: Path | str, *, max_pixels: int = DEFAULT_MAX_PIXELS) -> int:
    """Peak bytes of reading the metadata of ``path``: a JPEG is decoded at 1/8 scale
    to verify it (its coefficients held whole when it has several scans); other
    formats are checked without decoding their pixels."""
    header = _read_header(path)
    if header is None or (header.exact and header.pixels > max_pixels):
        return FLOOR
    if header.kind in VIDEO_FORMATS:
        return _VIDEO_PROBE
    if header.kind == "webp" and header.full_decode:
        return FLOOR + header.pixels // 4  # Pillow's WebP open: 14 MiB at 48 MP
    if header.kind != "jpeg":
        return FLOOR
    eighth = math.ceil(header.width / 8) * math.ceil(header.height / 8)
    return FLOOR + header.whole + math.ceil(eighth * header.bytes_per_pixel)


def _scaled_bytes(header: _Header, size: int) -> int:
    """The image at the shrink-on-load scale libvips picks: the smallest power of two
    (up to 1/8) that keeps the long edge at ``size`` or more; held twice over
    (decoded, then resized)."""
    scale = 1
    while scale < 8 and max(header.width, header.height) / (scale * 2) >= size:
        scale *= 2
    scaled = math.ceil(header.width / scale) * math.ceil(header.height / scale)
    return math.ceil(2 * scaled * header.bytes_per_pixel)


# ── headers ──────────────────────────────────────────────────────────────────────
def _read_header(path: Path | str) -> _Header | None:
    """The header facts of ``path``, None when it cannot be read or is no media."""
    try:
        # Not even opened unless it is a regular file: opening a device can have effects.
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
        with open_original(path) as fp:
            kind = sniff(fp.read(HEADER_SIZE))
            if kind.startswith("other:"):
                return None
            if kind in VIDEO_FORMATS:
                return _Header(kind)
            file_size = os.fstat(fp.fileno()).st_size
            return _READERS.get(kind, _raw_by_size)(fp, kind, file_size)
    except (MediaError, OSError, ValueError, IndexError, struct.error):
        return None


def _jpeg(fp: BinaryIO, kind: str, _size: int) -> _Header | None:
    """Walk the markers to the first scan: the frame (SOFn) gives the size and the
    components' sampling; several scans are coming when the frame is progressive or
    the first scan carries fewer components than the frame (libjpeg's rule for
    buffering the whole image's coefficients)."""
    fp.seek(2)
    frame: tuple[bool, int, int, list[tuple[int, int]]] | None = None
    for _ in range(1024):  # segments before the first scan: a few dozen in practice
        marker = fp.read(2)
        while len(marker) == 2 and marker[0] == 0xFF and marker[1] == 0xFF:
            marker = marker[1:] + fp.read(1)  # fill bytes
        if len(marker) < 2 or marker[0] != 0xFF:
            return None
        code = marker[1]
        if code in (0xD8, 0x01) or 0xD0 <= code <= 0xD7:
            continue  # no length: SOI, TEM, RSTn
        if code == 0xD9:
            return None  # EOI before any scan
        (length,) = struct.unpack(">H", fp.read(2))
        if length < 2:
            return None
        segment = fp.read(length - 2)
        if 0xC0 <= code <= 0xCF and code not in (0xC4, 0xC8, 0xCC):
            height, width, count = struct.unpack(">xHHB", segment[:6])
            sampling = [(segment[7 + 3 * i] >> 4, segment[7 + 3 * i] & 0x0F) for i in range(count)]
            frame = (code in (0xC2, 0xC6, 0xCA, 0xCE), width, height, sampling)
        elif code == 0xDA:
            if frame is None:
                return None
            progressive, width, height, sampling = frame
            several_scans = progressive or segment[0] < len(sampling)
            whole = _coefficient_bytes(width, height, sampling) if several_scans else 0
            return _Header(kind, width, height, float(len(sampling)), whole)
    return None


def _coefficient_bytes(width: int, height: int, sampling: list[tuple[int, int]]) -> int:
    """libjpeg's whole-image coefficient arrays (jdcoefct.c): per component, its
    blocks rounded up to whole MCUs, 128 bytes each."""
    if not sampling or min(min(h, v) for h, v in sampling) < 1:
        return 0
    h_max = max(h for h, _ in sampling)
    v_max = max(v for _, v in sampling)
    total = 0
    for h, v in sampling:
        across = math.ceil(width * h / (h_max * 8))
        down = math.ceil(height * v / (v_max * 8))
        total += _round_up(across, h) * _round_up(down, v)
    return total * _COEFFICIENT_BLOCK


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def _png(fp: BinaryIO, kind: str, _size: int) -> _Header:
    fp.seek(16)  # signature, IHDR length and type
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", fp.read(13))
    # Palette images decode to RGB(A); grey, grey+alpha, RGB, RGBA keep their channels.
    channels = {0: 1, 2: 3, 3: 4, 4: 2, 6: 4}.get(colour, 4)
    per_pixel = channels * (2 if depth == 16 else 1)
    return _Header(kind, width, height, float(per_pixel), full_decode=interlace == 1)


def _webp(fp: BinaryIO, kind: str, file_size: int) -> _Header | None:
    """The first image chunk: VP8 (lossy), VP8L (lossless), or VP8X's canvas."""
    width = height = 0
    lossless = False
    for chunk, start, length in _riff_chunks(fp, file_size):
        fp.seek(start)
        data = fp.read(min(length, 16))
        if chunk == b"VP8X" and len(data) >= 10:
            width = 1 + int.from_bytes(data[4:7], "little")
            height = 1 + int.from_bytes(data[7:10], "little")
        elif chunk == b"VP8L" and len(data) >= 5:
            lossless = True
            bits = int.from_bytes(data[1:5], "little")
            width = width or 1 + (bits & 0x3FFF)
            height = height or 1 + ((bits >> 14) & 0x3FFF)
            break
        elif chunk == b"VP8 " and len(data) >= 10:
            width = width or int.from_bytes(data[6:8], "little") & 0x3FFF
            height = height or int.from_bytes(data[8:10], "little") & 0x3FFF
            break
    if not width or not height:
        return None
    return _Header(kind, width, height, 4.0, full_decode=lossless)


def _riff_chunks(fp: BinaryIO, file_size: int) -> list[tuple[bytes, int, int]]:
    chunks: list[tuple[bytes, int, int]] = []
    position = 12
    while position + 8 <= file_size and len(chunks) < 64:
        fp.seek(position)
        chunk, length = struct.unpack("<4sI", fp.read(8))
        chunks.append((chunk, position + 8, length))
        position += 8 + length + (length & 1)
    return chunks


def _heif(fp: BinaryIO, kind: str, file_size: int) -> _Header | None:
    """The largest image spatial extent (``ispe``) among the item properties: the
    primary image's (a grid's tiles and thumbnails are smaller)."""
    largest = (0, 0)
    for meta in iter_boxes(fp, 0, file_size):
        if meta.type != b"meta":
            continue
        for iprp in iter_boxes(fp, meta.payload + 4, meta.end):  # meta is a full box
            if iprp.type != b"iprp":
                continue
            for ipco in iter_boxes(fp, iprp.payload, iprp.end):
                if ipco.type != b"ipco":
                    continue
                for prop in iter_boxes(fp, ipco.payload, ipco.end):
                    if prop.type == b"ispe" and prop.end - prop.payload >= 12:
                        fp.seek(prop.payload + 4)
                        extent = struct.unpack(">II", fp.read(8))
                        if extent[0] * extent[1] > largest[0] * largest[1]:
                            largest = extent
        break
    if not largest[0]:
        return None
    return _Header(kind, largest[0], largest[1])


def _tiff(fp: BinaryIO, kind: str, file_size: int) -> _Header | None:
    """The largest image among IFD0, its successors and their SubIFDs; a camera RAW
    when one of them holds sensor data (CFA or LinearRaw) or the magic says so."""
    fp.seek(0)
    order = fp.read(2)
    endian = {b"II": "<", b"MM": ">"}.get(order)
    if endian is None:
        return None
    fp.seek(4)
    (first,) = struct.unpack(endian + "I", fp.read(4))
    pending, seen = [first], set[int]()
    best: tuple[int, int, float] = (0, 0, 3.0)
    raw = kind in RAW_FORMATS
    while pending and len(seen) < 32:
        offset = pending.pop()
        if not 8 <= offset < file_size or offset in seen:
            continue
        seen.add(offset)
        tags, following = _ifd(fp, endian, offset)
        width, height = tags.get(256, (0,))[0], tags.get(257, (0,))[0]
        if tags.get(262, (0,))[0] in _CFA_PHOTOMETRICS:
            raw = True
        if width * height > best[0] * best[1]:
            samples = tags.get(277, (1,))[0]
            bits = max(tags.get(258, (8,)))
            best = (width, height, float(samples * (2 if bits > 8 else 1)))
        pending.extend(tags.get(330, ()))
        if following:
            pending.append(following)
    if not best[0]:
        return None
    return _Header(kind, best[0], best[1], best[2], raw=raw)


def _ifd(fp: BinaryIO, endian: str, offset: int) -> tuple[dict[int, tuple[int, ...]], int]:
    """The integer tags of interest of one IFD, and the offset of the next one."""
    fp.seek(offset)
    (count,) = struct.unpack(endian + "H", fp.read(2))
    entries = fp.read(12 * min(count, 1024))
    tags: dict[int, tuple[int, ...]] = {}
    for start in range(0, len(entries) - 11, 12):
        tag, kind, number, value = struct.unpack(endian + "HHI4s", entries[start : start + 12])
        if tag not in (256, 257, 258, 262, 277, 330) or kind not in (3, 4, 13):
            continue
        item = "H" if kind == 3 else "I"
        width = struct.calcsize(item)
        number = min(number, 64)
        if number * width <= 4:
            data = value[: number * width]
        else:
            here = fp.tell()
            fp.seek(struct.unpack(endian + "I", value)[0])
            data = fp.read(number * width)
            fp.seek(here)
        tags[tag] = struct.unpack(endian + item * (len(data) // width), data)
    (following,) = struct.unpack(endian + "I", fp.read(4) or b"\0\0\0\0")
    return {k: v for k, v in tags.items() if v}, following


def _raw_by_size(fp: BinaryIO, kind: str, file_size: int) -> _Header:
    """CR3 and RAF keep their dimensions in containers of their own: sensor pixels
    taken from the file's size instead (one and a half a byte)."""
    return _Header(kind, math.ceil(1.5 * file_size), 1, raw=True, exact=False)


_READERS = {
    "jpeg": _jpeg,
    "png": _png,
    "webp": _webp,
    "heif": _heif,
    "avif": _heif,
    "tiff": _tiff,
    "cr2": _tiff,
    "orf": _tiff,
    "rw2": _tiff,
}
