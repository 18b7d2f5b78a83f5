"""Recognise a file's format from its first bytes (magic numbers), never its name.

``sniff(header)`` names the format of the first :data:`HEADER_SIZE` bytes of a file:

* photos: ``jpeg png webp heif avif tiff cr2 cr3 raf orf rw2`` (``tiff`` and ``cr2`` are
  told apart from DNG and the makers' TIFF RAWs, NEF, ARW, PEF, SRW, 3FR, ERF, MEF,
  MOS and DCR, later, by their tags: see ``media.raw``);
* videos: ``mp4 mov m4v 3gp mpegts avi mkv webm`` (``mpegts``: every MPEG transport
  stream, broadcast ``.ts`` with 188-byte packets and AVCHD's ``.MTS``/``.m2ts`` with a
  4-byte timecode before each, one format as FFmpeg reads them and ``video/mp2t``
  serves them);
* anything else: ``other:<what>`` (``other:unknown`` when nothing matched).

``kind_of(format)`` says ``"photo"`` or ``"video"``.

JPEG XL is recognised but not supported: the libvips wheel has no JXL loader, and the one
Pillow plugin on PyPI (pillow-jxl-plugin) is GPL-3.0-or-later, a licence decision for the
project rather than a dependency to add in passing.
"""

from __future__ import annotations

PHOTO_EXTENSIONS: frozenset[str] = frozenset(
    {".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".heic", ".heif", ".avif"}
    | {".dng", ".cr2", ".nef", ".arw", ".cr3", ".raf", ".orf", ".rw2", ".pef"}
    # Other names of the above (Nikon's compacts, Sony's older cameras, Leica's RW2),
    # and the TIFF RAWs of more makers, told apart by their maker tag (media.raw).
    | {".nrw", ".srf", ".sr2", ".rwl", ".srw", ".3fr", ".erf", ".mef", ".mos", ".dcr", ".kdc"}
)
VIDEO_EXTENSIONS: frozenset[str] = frozenset(
    {".mp4", ".mov", ".m4v", ".3gp", ".3g2", ".mts", ".m2ts", ".ts", ".avi", ".mkv", ".webm"}
)
SUPPORTED_EXTENSIONS: frozenset[str] = PHOTO_EXTENSIONS | VIDEO_EXTENSIONS
# Sidecars that travel with their photo (scan reads them; organize and dedupe move them).
SIDECAR_EXTENSIONS: frozenset[str] = frozenset({".xmp", ".aae"})

MIME_TYPES: dict[str, str] = {
    "jpeg": "image/jpeg",
    "png": "image/png",
    "tiff": "image/tiff",
    "webp": "image/webp",
    "heif": "image/heif",
    "avif": "image/avif",
    "dng": "image/x-adobe-dng",
    "cr2": "image/x-canon-cr2",
    "cr3": "image/x-canon-cr3",
    "nef": "image/x-nikon-nef",
    "arw": "image/x-sony-arw",
    "raf": "image/x-fuji-raf",
    "orf": "image/x-olympus-orf",
    "rw2": "image/x-panasonic-rw2",
    "pef": "image/x-pentax-pef",
    "srw": "image/x-samsung-srw",
    "3fr": "image/x-hasselblad-3fr",
    "erf": "image/x-epson-erf",
    "mef": "image/x-mamiya-mef",
    "mos": "image/x-leaf-mos",
    "dcr": "image/x-kodak-dcr",
    "mp4": "video/mp4",
    "mov": "video/quicktime",
    "m4v": "video/x-m4v",
    "3gp": "video/3gpp",
    "mpegts": "video/mp2t",
    "avi": "video/x-msvideo",
    "mkv": "video/x-matroska",
    "webm": "video/webm",
}

# TIFF containers named by their maker's tag (media.raw).
MAKER_TIFF_RAW_FORMATS = frozenset({"nef", "arw", "pef", "srw", "3fr", "erf", "mef", "mos", "dcr"})
RAW_FORMATS = frozenset({"dng", "cr2", "cr3", "raf", "orf", "rw2"}) | MAKER_TIFF_RAW_FORMATS
VIDEO_FORMATS = frozenset({"mp4", "mov", "m4v", "3gp", "mpegts", "avi", "mkv", "webm"})
# RAWs whose container is no TIFF: recognised by their own magic bytes.
NON_TIFF_RAW_FORMATS = frozenset({"cr3", "raf", "orf", "rw2"})

# How many leading bytes `sniff` needs: three MPEG-TS packets of 192 bytes, and a margin.
HEADER_SIZE = 600

# ISO-BMFF brands of HEIF still images (HEVC-coded or the generic image brands).
_HEIF_BRANDS = frozenset({b"heic", b"heix", b"heim", b"heis", b"hevc", b"hevx", b"mif1", b"msf1"})
_AVIF_BRANDS = frozenset({b"avif", b"avis"})
# ISO-BMFF major brands of video files, by the format they are catalogued as.
_VIDEO_BRANDS: dict[bytes, str] = {
    b"qt  ": "mov",
    b"M4V ": "m4v",
    b"M4VH": "m4v",
    b"M4VP": "m4v",
    **{brand: "mp4" for brand in (b"isom", b"iso2", b"iso3", b"iso4", b"iso5", b"iso6")},
    **{brand: "mp4" for brand in (b"mp41", b"mp42", b"avc1", b"dash", b"MSNV", b"XAVC")},
    **{brand: "mp4" for brand in (b"mmp4", b"f4v ", b"NDAS", b"NDSC", b"MQT ", b"caqv")},
}
# QuickTime files older than the ftyp box start straight with one of these atoms.
_QUICKTIME_ATOMS = frozenset({b"moov", b"mdat", b"wide", b"pnot"})
_TS_SYNC = 0x47


def kind_of(fmt: str) -> str:
    """``"video"`` for a video format, else ``"photo"``."""
    return "video" if fmt in VIDEO_FORMATS else "photo"


def sniff(header: bytes) -> str:
    """Name the format in ``header`` (see the module docstring), or ``other:<what>``."""
    # TIFF-structured files (plain TIFF, DNG, NEF, ARW, PEF) are told apart later by their
    # tags; CR2 carries its own marker right after the TIFF header.
    if header.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if header.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if header[:4] == b"RIFF":
        return {b"WEBP": "webp", b"AVI ": "avi"}.get(header[8:12], "other:riff")
    if header[:4] in (b"II*\x00", b"MM\x00*"):
        return "cr2" if header[8:11] == b"CR\x02" else "tiff"
    if header[:4] in (b"IIRO", b"IIRS", b"MMOR"):
        return "orf"  # Olympus: a TIFF whose magic number is its own
    if header[:4] == b"IIU\x00":
        return "rw2"  # Panasonic likewise
    if header.startswith(b"FUJIFILMCCD-RAW"):
        return "raf"
    if header[4:8] == b"ftyp":
        return _sniff_isobmff(header)
    if header[4:8] in _QUICKTIME_ATOMS:
        return "mov"
    if header[:4] == b"\x1a\x45\xdf\xa3":  # EBML: Matroska or WebM, by the DocType
        return _sniff_ebml(header)
    if _is_transport_stream(header, packet=188, first=0):
        return "mpegts"
    if _is_transport_stream(header, packet=192, first=4):
        return "mpegts"  # AVCHD/Blu-ray: a 4-byte timecode before every packet
    return _sniff_other(header)


def _sniff_isobmff(header: bytes) -> str:
    major = header[8:12]
    box_size = int.from_bytes(header[:4], "big")
    # compatible brands follow major brand + minor version, up to the end of the ftyp box
    compatible = header[16 : min(box_size, len(header))]
    brands = {major} | {compatible[i : i + 4] for i in range(0, len(compatible) - 3, 4)}
    if major in _AVIF_BRANDS or (
        major in (b"mif1", b"msf1") and brands & _AVIF_BRANDS and b"heic" not in brands
    ):
        return "avif"
    if major == b"crx ":
        return "cr3"
    if brands & _HEIF_BRANDS and major not in _VIDEO_BRANDS:
        return "heif"
    if major in _VIDEO_BRANDS:
        return _VIDEO_BRANDS[major]
    if major.startswith((b"3gp", b"3g2")):
        return "3gp"
    return "other:" + major.decode("ascii", "replace").strip()


def _sniff_ebml(header: bytes) -> str:
    # The DocType element (id 0x4282) sits in the first few dozen bytes of the EBML header.
    doc_type = header[: min(len(header), 64)]
    if b"\x42\x82" in doc_type:
        if b"webm" in doc_type:
            return "webm"
        if b"matroska" in doc_type:
            return "mkv"
    return "other:ebml"


def _is_transport_stream(header: bytes, *, packet: int, first: int) -> bool:
    # One sync byte proves nothing (0x47 is "G"); three at packet distance do.
    positions = [first + i * packet for i in range(3)]
    return len(header) > positions[-1] and all(header[p] == _TS_SYNC for p in positions)


def _sniff_other(header: bytes) -> str:
    # Only to give the caller a helpful detail; none of these is supported.
    known = {
        b"GIF8": "gif",
        b"BM": "bmp",
        b"%PDF": "pdf",
        b"\x00\x00\x00\x0cJXL": "jxl",
        b"\xff\x0a": "jxl",
    }
    for magic, name in known.items():
        if header.startswith(magic):
            return "other:" + name
    return "other:unknown"
