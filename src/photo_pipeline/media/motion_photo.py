"""Google and Samsung Motion Photos: a JPEG whose short MP4 clip is appended to its bytes.

The JPEG's XMP says where the clip is, in one of two ways:

* Motion Photo format 1 (Pixel 6+, recent Samsung): ``GCamera:MotionPhoto="1"`` and a
  ``Container:Directory`` listing the items stored one after another at the end of the
  file (``Item:Semantic="MotionPhoto"``, ``Item:Length``, ``Item:Padding``);
* the older MicroVideo (Pixel 2–5): ``GCamera:MicroVideo="1"`` and
  ``GCamera:MicroVideoOffset``, the clip's distance from the end of the file.

``find_embedded_video(path)`` returns where the clip lies (:class:`EmbeddedVideo`) or None,
and never modifies the file. A claimed clip is only believed when an ISO-BMFF ``ftyp`` box
is really at that offset. ``embedded_video(fp, size)`` does the same on an open file.
"""

from __future__ import annotations

import os
import struct
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from photo_pipeline.media.files import media_error_from_os, open_original

_XMP_SIGNATURE = b"http://ns.adobe.com/xap/1.0/\x00"
_CAMERA = "{http://ns.google.com/photos/1.0/camera/}"
_CONTAINER = "{http://ns.google.com/photos/1.0/container/}"
_ITEM = "{http://ns.google.com/photos/1.0/container/item/}"
_RDF = "{http://www.w3.org/1999/02/22-rdf-syntax-ns#}"
_MAX_SEGMENTS = 512  # JPEG marker segments before the scan; real files have a dozen


@dataclass(frozen=True)
class EmbeddedVideo:
    """The byte range of a Motion Photo's clip inside its JPEG."""

    offset: int
    length: int
    mime: str


def find_embedded_video(path: Path | str) -> EmbeddedVideo | None:
    """The clip inside the Motion Photo at ``path``, or None; raises MediaError on I/O."""
    with open_original(path) as fp:
        try:
            return embedded_video(fp, os.fstat(fp.fileno()).st_size)
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc


def embedded_video(fp: BinaryIO, file_size: int) -> EmbeddedVideo | None:
    """The clip inside the open JPEG ``fp`` of ``file_size`` bytes, or None."""
    for xmp in _xmp_packets(fp):
        found = _from_xmp(xmp, file_size)
        if found is not None and _is_isobmff_at(fp, found.offset):
            return found
    return None


def _xmp_packets(fp: BinaryIO) -> Iterator[bytes]:
    """The standard XMP packets in the JPEG's APP1 segments (they precede the scan)."""
    fp.seek(0)
    if fp.read(2) != b"\xff\xd8":
        return
    for _ in range(_MAX_SEGMENTS):
        marker = fp.read(2)
        if len(marker) < 2 or marker[0] != 0xFF or marker[1] in (0xDA, 0xD9):
            return  # start of scan, end of image, or damage: no more metadata
        if 0xD0 <= marker[1] <= 0xD7 or marker[1] == 0x01:
            continue  # markers without a length
        length_bytes = fp.read(2)
        if len(length_bytes) < 2:
            return
        length = struct.unpack(">H", length_bytes)[0] - 2
        if marker[1] == 0xE1 and length > len(_XMP_SIGNATURE):
            payload = fp.read(length)
            if payload.startswith(_XMP_SIGNATURE):
                yield payload[len(_XMP_SIGNATURE) :]
        else:
            fp.seek(length, os.SEEK_CUR)


def _from_xmp(xmp: bytes, file_size: int) -> EmbeddedVideo | None:
    try:
        root = ElementTree.fromstring(xmp.strip(b"\x00 \t\r\n"))
    except ElementTree.ParseError:
        return None
    found = _from_container_directory(root, file_size)
    if found is not None:
        return found
    for element in root.iter():
        offset = _number(_property(element, _CAMERA + "MicroVideoOffset"))
        if offset is not None and 0 < offset < file_size:
            return EmbeddedVideo(file_size - offset, offset, "video/mp4")
    return None


def _from_container_directory(root: ElementTree.Element, file_size: int) -> EmbeddedVideo | None:
    for directory in root.iter(_CONTAINER + "Directory"):
        items = [_item_properties(li) for li in directory.iter(_RDF + "li")]
        # Items after the primary image lie end to end at the end of the file, in order:
        # an item starts where the lengths (and paddings) of it and all later ones end.
        end_offset = file_size
        placed: list[EmbeddedVideo] = []
        for item in reversed(items[1:]):
            length = _number(item.get("Length"))
            padding = _number(item.get("Padding")) or 0
            if length is None or length <= 0:
                return None
            end_offset -= length + padding
            if end_offset <= 0:
                return None
            semantic, mime = item.get("Semantic", ""), item.get("Mime", "")
            if semantic == "MotionPhoto" or mime.startswith("video/"):
                placed.append(EmbeddedVideo(end_offset, length, mime or "video/mp4"))
        if placed:
            return placed[-1]  # the first video item in directory order
    return None


def _item_properties(li: ElementTree.Element) -> dict[str, str]:
    """``Item:*`` properties of one directory entry, as attributes or child elements."""
    found: dict[str, str] = {}
    for element in li.iter():
        for name, value in element.attrib.items():
            if name.startswith(_ITEM):
                found[name.removeprefix(_ITEM)] = value
        if element.tag.startswith(_ITEM) and element.text:
            found[element.tag.removeprefix(_ITEM)] = element.text.strip()
    return found


def _property(element: ElementTree.Element, name: str) -> str | None:
    if name in element.attrib:
        return element.attrib[name]
    if element.tag == name and element.text:
        return element.text.strip()
    return None


def _number(text: str | None) -> int | None:
    # isdigit() alone takes "²", which int() refuses
    if text is None or not (text.strip().isascii() and text.strip().isdigit()):
        return None
    return int(text)


def _is_isobmff_at(fp: BinaryIO, offset: int) -> bool:
    fp.seek(offset + 4)
    return fp.read(4) == b"ftyp"
