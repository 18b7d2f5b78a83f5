"""Camera RAWs: tell plain TIFF from TIFF-structured RAW (DNG, CR2, NEF, ARW, PEF), and
read the RAWs with containers of their own (CR3, RAF, ORF, RW2).

Metadata comes from the EXIF each format keeps in its own place: the TIFF IFDs (exifread;
ORF and RW2 are TIFFs with a private magic number), the JPEG preview of a RAF, the
``CMT1``/``CMT2``/``CMT4`` TIFF blocks of a CR3. The pixel size comes from LibRaw (rawpy)
when it can open the file, else from the EXIF dimensions. Only headers are read: RAW
pixel data is not decoded here.
"""

from __future__ import annotations

import dataclasses
import io
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from PIL import ExifTags, Image

from photo_pipeline.media.decode import Probe, check_pixels, data_within_file
from photo_pipeline.media.errors import CORRUPT_FILE, OUT_OF_MEMORY, UNSUPPORTED_FORMAT, MediaError
from photo_pipeline.media.formats import MAKER_TIFF_RAW_FORMATS, MIME_TYPES
from photo_pipeline.media.isobmff import CANON_UUID, find_box, read_payload
from photo_pipeline.media.tags import (
    TagSet,
    as_int,
    as_text,
    camera_fields,
    orientation,
    tags_from_file,
    tags_from_pillow,
)

Base = ExifTags.Base
DNG_VERSION = 0xC612
UNIQUE_CAMERA_MODEL = 0xC614
PHOTOMETRIC = 0x0106
SUB_IFDS = 0x014A
RAW_PHOTOMETRICS = frozenset({32803, 34892})  # CFA, LinearRaw

# LibRaw's `flip` back to the EXIF orientation it was derived from (dcraw's "50132467").
_FLIP_TO_ORIENTATION = {0: 1, 1: 2, 2: 4, 3: 3, 4: 5, 5: 8, 6: 6, 7: 7}


@dataclass(frozen=True)
class _LibRaw:
    width: int
    height: int
    flip: int


def probe_tiff_family(
    kind: str, fp: BinaryIO, path: Path, file_size: int, max_pixels: int
) -> Probe | None:
    """Probe a camera RAW; None means the file is a plain TIFF for Pillow to handle."""
    tags = tags_from_file(fp)
    raw_format = _raw_format(kind, tags)
    if raw_format is None:
        if as_int(tags.base.get(PHOTOMETRIC)) in RAW_PHOTOMETRICS:
            make = as_text(tags.base.get(Base.Make)) or "unknown camera"
            raise MediaError(UNSUPPORTED_FORMAT, f"{path}: camera RAW from {make} not supported")
        return None
    libraw = _open_libraw(path)
    if libraw is None and raw_format in MAKER_TIFF_RAW_FORMATS and not _looks_raw(tags):
        return None  # a maker's TIFF that is no RAW (a scanner's, a Coolpix's): plain TIFF
    base = tags.base
    for offsets_tag, counts_tag in ((273, 279), (324, 325)):
        if not data_within_file(base.get(offsets_tag), base.get(counts_tag), file_size):
            raise MediaError(CORRUPT_FILE, f"{path}: {raw_format} data lies beyond end of file")
    return _probe(raw_format, tags, libraw, path, max_pixels)


def probe_raw(kind: str, fp: BinaryIO, path: Path, file_size: int, max_pixels: int) -> Probe:
    """Probe a CR3, RAF, ORF or RW2 (recognised by their own magic bytes)."""
    if kind == "cr3":
        tags = _cr3_tags(fp, file_size)
    elif kind == "raf":
        preview = raf_preview(fp, file_size)
        tags = tags_from_file(io.BytesIO(preview)) if preview else TagSet()
    else:  # orf, rw2: TIFF IFDs behind a private magic number
        tags = tags_from_file(fp)
    return _probe(kind, tags, _open_libraw(path), path, max_pixels)


def _probe(
    raw_format: str, tags: TagSet, libraw: _LibRaw | None, path: Path, max_pixels: int
) -> Probe:
    if libraw is None and not tags.base and not tags.exif:
        raise MediaError(CORRUPT_FILE, f"{path}: {raw_format} header unreadable")
    width, height = (libraw.width, libraw.height) if libraw else _exif_size(tags, path)
    check_pixels(width, height, max_pixels, path)
    base = tags.base
    turn = orientation(tags)
    if Base.Orientation not in base and libraw is not None:
        turn = _FLIP_TO_ORIENTATION.get(libraw.flip, 1)
    camera = camera_fields(tags)
    if camera.model is None:  # DNG converters may keep only UniqueCameraModel
        camera = dataclasses.replace(camera, model=as_text(base.get(UNIQUE_CAMERA_MODEL)))
    return Probe(raw_format, MIME_TYPES[raw_format], width, height, turn, tags, camera)


_RAF_PREVIEW_AT = 84  # big-endian offset and length of the JPEG preview
_MAX_PREVIEW_BYTES = 64 << 20
_MAX_CMT_BYTES = 1 << 20


def raf_preview(fp: BinaryIO, file_size: int) -> bytes | None:
    """A RAF's embedded JPEG (it carries the EXIF), or None when the header is damaged."""
    fp.seek(_RAF_PREVIEW_AT)
    pointer = fp.read(8)
    if len(pointer) < 8:
        return None
    offset, length = struct.unpack(">II", pointer)
    if not 0 < length <= _MAX_PREVIEW_BYTES or offset + length > file_size:
        return None
    fp.seek(offset)
    data = fp.read(length)
    return data if data.startswith(b"\xff\xd8") else None


def _cr3_tags(fp: BinaryIO, file_size: int) -> TagSet:
    # moov/uuid(Canon)/CMT1 is IFD0, CMT2 the Exif IFD, CMT4 the GPS IFD: each a TIFF
    groups: list[dict[int, object]] = []
    for name in (b"CMT1", b"CMT2", b"CMT4"):
        box = find_box(fp, file_size, (b"moov", b"uuid:" + CANON_UUID.hex().encode(), name))
        block = read_payload(fp, box, _MAX_CMT_BYTES) if box is not None else None
        groups.append(_ifd0(block) if block else {})
    return TagSet(*groups)


def _ifd0(tiff: bytes) -> dict[int, object]:
    exif = Image.Exif()
    try:
        exif.load(b"Exif\x00\x00" + tiff)
    except Exception:
        return {}  # a damaged block costs its tags, never the photo
    return dict(tags_from_pillow(exif).base)


def _raw_format(kind: str, tags: TagSet) -> str | None:
    if kind == "cr2":
        return "cr2"  # "CR\x02" right after the TIFF header
    if DNG_VERSION in tags.base:
        return "dng"
    make = (as_text(tags.base.get(Base.Make)) or "").upper()
    # These RAWs are plain TIFF containers: the maker, then the raw data's shape (or
    # LibRaw accepting the file) tell them from a TIFF that the maker's scanner or
    # software wrote (probe_tiff_family).
    return next((fmt for prefix, fmt in _MAKERS if make.startswith(prefix)), None)


# Maker tag prefix (upper case) -> format. Nikon's NRW and Sony's SR2/SRF read as NEF
# and ARW: the same containers, and a format is named by content, not by file name.
_MAKERS = (
    ("NIKON", "nef"),
    ("SONY", "arw"),
    ("PENTAX", "pef"),
    ("RICOH", "pef"),
    ("SAMSUNG", "srw"),
    ("HASSELBLAD", "3fr"),
    ("SEIKO EPSON", "erf"),
    ("MAMIYA", "mef"),
    ("LEAF", "mos"),
    ("EASTMAN KODAK", "dcr"),
    ("KODAK", "dcr"),
)


def _looks_raw(tags: TagSet) -> bool:
    # RAWs keep sensor data in SubIFDs (IFD0 being a preview) or as CFA/LinearRaw in IFD0
    return SUB_IFDS in tags.base or as_int(tags.base.get(PHOTOMETRIC)) in RAW_PHOTOMETRICS


def _open_libraw(path: Path) -> _LibRaw | None:
    # RawPy().open_file rather than rawpy.imread: imread warns about OpenMP under fork, which
    # concerns demosaicing only. open_file parses headers; we read only `sizes`, because
    # rawpy's `other` and `lens` first unpack (read and decode) the whole raw image.
    # Here, not at the top: LibRaw and NumPy cost ~0.1 s a start, and every command
    # that reads metadata's types (most of them) would pay it.
    import rawpy

    try:
        with rawpy.RawPy() as raw:
            raw.open_file(str(path))
            sizes = raw.sizes
    except rawpy.LibRawUnsufficientMemoryError as exc:  # the moment's, not the file's
        raise MediaError(OUT_OF_MEMORY, f"{path}: LibRaw ran out of memory opening it") from exc
    except rawpy.LibRawError:
        return None
    return _LibRaw(width=sizes.width, height=sizes.height, flip=sizes.flip)


def _exif_size(tags: TagSet, path: Path) -> tuple[int, int]:
    width = as_int(tags.exif.get(Base.ExifImageWidth))
    height = as_int(tags.exif.get(Base.ExifImageHeight))
    if width and height:
        return width, height
    # IFD0 holds the full image only when it is not flagged as a reduced-size preview
    if not as_int(tags.base.get(Base.NewSubfileType)):
        width = as_int(tags.base.get(Base.ImageWidth))
        height = as_int(tags.base.get(Base.ImageLength))
        if width and height:
            return width, height
    raise MediaError(CORRUPT_FILE, f"{path}: RAW pixel size unknown (LibRaw cannot open it)")
