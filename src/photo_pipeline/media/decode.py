"""Open JPEG, PNG, WebP, TIFF, HEIF and AVIF headers with Pillow and check that they decode.

The check of a JPEG is a decode at 1/8 scale (nothing cheaper catches truncation). A
caller that decodes the photo itself right after, and fails it when that decode does
(the scan rendering a new photo: ``media.render`` decodes with ``fail_on="error"``),
wraps its metadata read in :func:`pixels_checked_by_caller` so that the photo is
decoded once, not twice.

A decode that runs out of memory is ``out_of_memory``, not ``corrupt_file``
(:func:`decode_failure`). Pillow reports every libjpeg error as "broken data
stream", libjpeg's "Insufficient memory" among them: a JPEG whose check decode fails
so is decoded again by libvips, whose loader keeps libjpeg's message, to tell which.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from PIL import (
    AvifImagePlugin,
    Image,
    ImageFile,
    JpegImagePlugin,
    PngImagePlugin,
    TiffImagePlugin,
    WebPImagePlugin,
)
from pillow_heif.as_plugin import HeifImageFile

from photo_pipeline.media import isobmff
from photo_pipeline.media.errors import (
    CORRUPT_FILE,
    OUT_OF_MEMORY,
    TOO_MANY_PIXELS,
    MediaError,
    out_of_memory,
)
from photo_pipeline.media.files import media_error_from_os
from photo_pipeline.media.formats import MIME_TYPES
from photo_pipeline.media.tags import (
    CameraFields,
    TagSet,
    camera_fields,
    orientation,
    tags_from_file,
    tags_from_pillow,
)

# We construct plugin classes directly instead of calling Image.open: the format is already
# known from the magic bytes, and Image.open's decompression-bomb check (a process-wide
# MAX_IMAGE_PIXELS) would warn or raise before our own, per-call max_pixels check.
_PLUGINS: dict[str, type[ImageFile.ImageFile]] = {
    "jpeg": JpegImagePlugin.JpegImageFile,
    "png": PngImagePlugin.PngImageFile,
    "webp": WebPImagePlugin.WebPImageFile,
    "tiff": TiffImagePlugin.TiffImageFile,
    "heif": HeifImageFile,
    "avif": AvifImagePlugin.AvifImageFile,  # Pillow >= 11.3 wheels ship libavif
}


# Per thread (and task): one pool thread skipping its check skips no other thread's.
_CALLER_DECODES: ContextVar[bool] = ContextVar("pixels_checked_by_caller", default=False)


@contextmanager
def pixels_checked_by_caller() -> Iterator[None]:
    """Within this block, opening a JPEG skips its check decode: the caller promises
    to decode every pixel itself and to treat a failure of that decode as a corrupt
    file. Headers, sizes and the other formats' cheap checks stay as they are."""
    token = _CALLER_DECODES.set(True)
    try:
        yield
    finally:
        _CALLER_DECODES.reset(token)


@dataclass(frozen=True)
class Probe:
    """What a decoder learned about one file, before capture-time and GPS interpretation."""

    format: str
    mime: str
    width: int  # as stored, before orientation
    height: int
    orientation: int
    tags: TagSet
    camera: CameraFields


def decode_failure(exc: BaseException, path: Path, what: str) -> MediaError:
    """Classify an exception raised while decoding ``path``."""
    if out_of_memory(exc):
        return MediaError(OUT_OF_MEMORY, f"{path}: {what}: out of memory: {exc}")
    if isinstance(exc, OSError) and exc.errno is not None:
        return media_error_from_os(exc, path)  # a real I/O failure, not a decoder complaint
    if isinstance(exc, (Image.DecompressionBombError, Image.DecompressionBombWarning)):
        return MediaError(TOO_MANY_PIXELS, f"{path}: {exc}")
    return MediaError(CORRUPT_FILE, f"{path}: {what}: {type(exc).__name__}: {exc}")


def check_pixels(width: int, height: int, max_pixels: int, path: Path) -> None:
    """Refuse nonsensical sizes and images above ``max_pixels`` before any pixel is decoded."""
    if width <= 0 or height <= 0:
        raise MediaError(CORRUPT_FILE, f"{path}: image size {width}x{height}")
    if width * height > max_pixels:
        raise MediaError(
            TOO_MANY_PIXELS, f"{path}: {width}x{height} = {width * height} pixels > {max_pixels}"
        )


def data_within_file(offsets: Any, counts: Any, file_size: int) -> bool:
    """Whether TIFF strips/tiles (offsets + byte counts) all end inside the file."""
    offsets, counts = _ints(offsets), _ints(counts)
    if offsets is None or counts is None:
        return True  # nothing to check
    if len(offsets) != len(counts):
        return False
    return all(
        isinstance(o, int) and isinstance(c, int) and o + c <= file_size
        for o, c in zip(offsets, counts, strict=True)
    )


def _ints(value: Any) -> Sequence[Any] | None:
    if isinstance(value, int):
        return (value,)
    return value if isinstance(value, Sequence) and not isinstance(value, (str, bytes)) else None


def probe_pillow(kind: str, fp: BinaryIO, path: Path, file_size: int, max_pixels: int) -> Probe:
    """Read size and EXIF of a Pillow-supported file and verify that its data is intact."""
    try:
        fp.seek(0)
        image = _PLUGINS[kind](fp)
    except Exception as exc:
        raise decode_failure(exc, path, f"cannot read {kind} header") from exc
    width, height = image.size
    if kind == "tiff":
        # Pillow reports a TIFF's size already turned by its orientation: take the stored one
        tiff_tags = image.tag_v2  # type: ignore[attr-defined]
        width, height = tiff_tags.get(256, width), tiff_tags.get(257, height)
    check_pixels(width, height, max_pixels, path)
    tags = _read_tags(kind, image, fp)
    mime = getattr(image, "custom_mimetype", None) or MIME_TYPES[kind]
    try:
        _verify(kind, image, fp, file_size, path)
    except MediaError:
        raise
    except Exception as exc:
        raise decode_failure(exc, path, f"{kind} data does not decode") from exc
    return Probe(kind, mime, width, height, orientation(tags), tags, camera_fields(tags))


def _read_tags(kind: str, image: ImageFile.ImageFile, fp: BinaryIO) -> TagSet:
    if kind == "png" and not {"exif", "Raw profile type exif"} & image.info.keys():
        # Pillow's PNG getexif() decodes the whole image to look for an eXIf chunk after the
        # pixel data; exifread finds one by walking the chunks without inflating anything.
        return tags_from_file(fp)
    try:
        exif = image.getexif()
    except MemoryError:
        raise
    except Exception:
        exif = Image.Exif()  # unreadable EXIF costs the metadata, not the photo
    return tags_from_pillow(exif)


def _verify(
    kind: str, image: ImageFile.ImageFile, fp: BinaryIO, file_size: int, path: Path
) -> None:
    if kind == "jpeg" and not _CALLER_DECODES.get():
        # A full decode is the only reliable way to catch a truncated or damaged scan; DCT
        # scaling (draft) decodes at 1/8 size, so it costs a fraction of a real decode. This
        # relies on ImageFile.LOAD_TRUNCATED_IMAGES staying False (Pillow's default).
        fp.seek(0)
        check = JpegImagePlugin.JpegImageFile(fp)
        check.draft(None, (max(1, check.width // 8), max(1, check.height // 8)))
        try:
            check.load()
        except OSError as exc:
            if exc.errno is None and _libjpeg_out_of_memory(fp):
                raise MediaError(
                    OUT_OF_MEMORY, f"{path}: jpeg data does not decode: out of memory"
                ) from exc
            raise
    elif kind == "png":
        # verify() walks every chunk to IEND and checks its CRC without inflating pixels
        fp.seek(0)
        PngImagePlugin.PngImageFile(fp).verify()
    elif kind == "tiff":
        # TIFFs can be huge scans: check that the pixel data the header points at exists
        tiff_tags = image.tag_v2  # type: ignore[attr-defined]
        for offsets_tag, counts_tag in ((273, 279), (324, 325)):
            if not data_within_file(
                tiff_tags.get(offsets_tag), tiff_tags.get(counts_tag), file_size
            ):
                raise MediaError(CORRUPT_FILE, f"{path}: TIFF image data lies beyond end of file")
    elif kind == "heif" and isobmff.cut_short(fp, file_size):
        # libheif (1.23 in pillow-heif 1.9) opens a file without checking that its items
        # lie within it: the boxes' sizes say whether it was cut short.
        raise MediaError(CORRUPT_FILE, f"{path}: HEIF data lies beyond end of file")
    # WebP and AVIF: opening already validated the container (libwebp's demuxer,
    # libavif's item extents), which is what catches truncation, so there is nothing
    # more to do cheaply.


def _libjpeg_out_of_memory(fp: BinaryIO) -> bool:
    """Whether libjpeg runs out of memory decoding ``fp`` at 1/8 scale, as libvips
    reports it (Pillow's "broken data stream" says no more than that libjpeg failed).
    Only ever asked after such a failure: a damaged file is decoded twice, no other."""
    import pyvips  # loaded only here: reading metadata does not otherwise need libvips

    pyvips.cache_set_max(0)  # as media.render: a cached operation would keep the file open
    fp.seek(0)
    try:
        source = pyvips.Source.new_from_descriptor(fp.fileno())
        pyvips.Image.new_from_source(source, "", shrink=8, fail_on="error").avg()
    except MemoryError:
        return True
    except pyvips.Error as exc:
        return out_of_memory(exc)
    return False
