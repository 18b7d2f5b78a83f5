"""Whether a photo may carry curation of its own (XMP, IPTC) at all, from its segment
and chunk headers only: a cheap look before asking exiftool, which costs a request a
photo (``pipeline.xmp.readback`` reads a new photo's rating and keywords once).

Only the answer "no" is firm. It is given for a JPEG whose segments before the scan
hold no XMP (APP1 ``http://ns.adobe.com/…``), no IPTC (APP13), no XMP or IPTC tag in
its EXIF IFD0, and nothing after its end of image (a trailer may hold either), and for
a PNG without a text chunk (XMP and the raw profiles live in those) and no such tag in
its EXIF chunk. Any other
format, and any file whose headers do not read as expected, may carry them.
"""

from __future__ import annotations

import os
import struct
from typing import BinaryIO

_JPEG_SOI = b"\xff\xd8"
_JPEG_EOI = b"\xff\xd9"
_PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
_XMP_PREFIX = b"http://ns.adobe.com/"  # the standard packet's and extended XMP's
_EXIF_PREFIX = b"Exif\x00\x00"
# IFD0 tags that hold XMP (ApplicationNotes), IPTC-NAA, or Photoshop's resources (IPTC).
_EMBEDDING_TAGS = frozenset({0x02BC, 0x83BB, 0x8649})
_PNG_TEXT_CHUNKS = frozenset({b"tEXt", b"zTXt", b"iTXt"})
_MAX_SEGMENTS = 512
_MAX_CHUNKS = 100_000


def may_hold_curation(path: str) -> bool:
    """False only when the JPEG or PNG at ``path`` surely holds no XMP and no IPTC;
    True otherwise (other formats, damaged headers). Raises OSError on I/O."""
    with open(path, "rb") as fp:
        head = fp.read(8)
        if head.startswith(_JPEG_SOI):
            return _jpeg_may_hold(fp)
        if head == _PNG_SIGNATURE:
            return _png_may_hold(fp)
    return True


def _jpeg_may_hold(fp: BinaryIO) -> bool:
    fp.seek(2)
    for _ in range(_MAX_SEGMENTS):
        marker = fp.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            return True  # not as expected: exiftool decides
        if marker[1] == 0xDA:  # start of scan: no metadata segments follow
            return _has_trailer(fp)
        if 0xD0 <= marker[1] <= 0xD7 or marker[1] in (0x01, 0xD8):
            continue  # markers without a length
        length_bytes = fp.read(2)
        if len(length_bytes) < 2:
            return True
        length = struct.unpack(">H", length_bytes)[0] - 2
        if length < 0:
            return True
        if marker[1] == 0xED:  # APP13: Photoshop's resources, where IPTC lives
            return True
        if marker[1] == 0xE1:
            payload = fp.read(length)
            if len(payload) < length or payload.startswith(_XMP_PREFIX):
                return True
            if payload.startswith(_EXIF_PREFIX) and _ifd0_embeds(payload[len(_EXIF_PREFIX) :]):
                return True
            continue
        fp.seek(length, os.SEEK_CUR)
    return True


def _has_trailer(fp: BinaryIO) -> bool:
    """Whether anything follows the end-of-image marker (a trailer: FotoStation's
    IPTC, Canon's VRD with XMP, a Motion Photo's clip…). The entropy-coded data is not
    walked: a file that does not end with the marker may have one."""
    size = fp.seek(0, os.SEEK_END)
    fp.seek(size - 2)
    return fp.read(2) != _JPEG_EOI


def _ifd0_embeds(tiff: bytes) -> bool:
    """Whether the EXIF block's first IFD has a tag that embeds XMP or IPTC (True also
    when it does not read as TIFF)."""
    if tiff[:4] == b"II*\x00":
        order = "<"
    elif tiff[:4] == b"MM\x00*":
        order = ">"
    else:
        return True
    try:
        (offset,) = struct.unpack_from(order + "I", tiff, 4)
        (count,) = struct.unpack_from(order + "H", tiff, offset)
        tags = [struct.unpack_from(order + "H", tiff, offset + 2 + 12 * n)[0] for n in range(count)]
    except struct.error:
        return True
    return not _EMBEDDING_TAGS.isdisjoint(tags)


def _png_may_hold(fp: BinaryIO) -> bool:
    for _ in range(_MAX_CHUNKS):
        header = fp.read(8)
        if len(header) < 8:
            return True  # no IEND: damaged
        length, kind = struct.unpack(">I4s", header)
        if kind in _PNG_TEXT_CHUNKS:
            return True
        if kind == b"IEND":
            return False
        if kind == b"eXIf":
            data = fp.read(length)
            if len(data) < length or _ifd0_embeds(data):
                return True
            fp.seek(4, os.SEEK_CUR)  # its CRC
            continue
        fp.seek(length + 4, os.SEEK_CUR)  # the data and its CRC
    return True
