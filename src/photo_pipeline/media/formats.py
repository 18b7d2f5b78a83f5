"""Recognise a file's format from its first bytes (magic numbers), never its name."""

from __future__ import annotations

SUPPORTED_EXTENSIONS: frozenset[str] = frozenset(
    {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".heic", ".heif"}
    | {".dng", ".cr2", ".nef", ".arw"}
)

MIME_TYPES: dict[str, str] = {
    "jpeg": "image/jpeg",
    "png": "image/png",
    "tiff": "image/tiff",
    "webp": "image/webp",
    "heif": "image/heif",
    "dng": "image/x-adobe-dng",
    "cr2": "image/x-canon-cr2",
    "nef": "image/x-nikon-nef",
    "arw": "image/x-sony-arw",
}

RAW_FORMATS = frozenset({"dng", "cr2", "nef", "arw"})

# How many leading bytes `sniff` needs.
HEADER_SIZE = 64

# ISO-BMFF brands of HEIF still images (HEVC-coded or the generic image brands).
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"})
_AVIF_BRANDS = frozenset({b"avif", b"avis"})


def sniff(header: bytes) -> str:
    """Name the format family in ``header``: jpeg, png, webp, heif, tiff, cr2 or other:<what>."""
    # TIFF-structured files (plain TIFF, DNG, NEF, ARW) are told apart later by their tags;
    # CR2 carries its own marker right after the TIFF header.
    if header.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if header.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if header[:4] == b"RIFF" and header[8:12] == b"WEBP":
        return "webp"
    if header[:4] in (b"II*\x00", b"MM\x00*"):
        return "cr2" if header[8:11] == b"CR\x02" else "tiff"
    if header[4:8] == b"ftyp":
        return _sniff_isobmff(header)
    return _sniff_other(header)


def _sniff_isobmff(header: bytes) -> str:
    major = header[8:12]
    box_size = int.from_bytes(header[:4], "big")
    # compatible brands follow major brand + minor version, up to the end of the ftyp box
    compatible = header[16 : min(box_size, len(header))]
    brands = {major} | {compatible[i : i + 4] for i in range(0, len(compatible) - 3, 4)}
    if major in _AVIF_BRANDS or (
        major == b"mif1" and brands & _AVIF_BRANDS and b"heic" not in brands
    ):
        return "other:avif"
    if brands & _HEIF_BRANDS:
        return "heif"
    return "other:" + major.decode("ascii", "replace").strip()


def _sniff_other(header: bytes) -> str:
    # Only to give the caller a helpful detail; none of these is supported.
    known = {
        b"GIF8": "gif",
        b"BM": "bmp",
        b"%PDF": "pdf",
        b"\x00\x00\x00\x0cJXL": "jxl",
        b"\xff\x0a": "jxl",
        b"IIRO": "orf",
        b"IIU\x00": "rw2",
        b"FUJIFILM": "raf",
    }
    for magic, name in known.items():
        if header.startswith(magic):
            return "other:" + name
    return "other:unknown"
