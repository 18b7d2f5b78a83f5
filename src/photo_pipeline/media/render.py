"""Renditions: a thumbnail and a preview of a photo, from one shrink-on-load decode.

A JPEG is decoded at the smallest DCT scale that covers the largest rendition; other
formats go through libvips ``thumbnail`` (WebP scaled decodes, streaming), so a 24-MP
photo never exists at full size in memory. HEIC is decoded by libheif at full size
(HEVC has no scaled decode) and read by libvips in place. The largest rendition is
decoded once and kept in memory; the smaller ones are resized from it, and the pHash
is taken from the thumbnail. The decode runs with ``fail_on="error"``: a truncated
file fails here (the scan relies on it: ``pipeline.ingest.scan``). A decode that runs
short of memory (libvips, libjpeg, libheif or LibRaw say so) is ``out_of_memory``,
never ``corrupt_file``: the file is fine, the moment was not.

Every rendition is oriented (EXIF orientation applied), converted to sRGB from an
embedded ICC profile, and carries no metadata at all (no EXIF, no GPS, no XMP, no ICC:
an untagged JPEG, WebP or AVIF is sRGB by definition).

Videos render from their poster frame (``media.poster``: about 1 s in, turned upright,
decoded in a child process killed after ``video_time_limit``). Camera RAWs render from
their embedded JPEG preview when it is at least as large as the largest rendition, else
from a half-size LibRaw development.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pillow_heif
import pyvips
from PIL import Image, ImageCms

from photo_pipeline.media.errors import (
    CORRUPT_FILE,
    EMPTY_FILE,
    OUT_OF_MEMORY,
    TOO_MANY_PIXELS,
    UNSUPPORTED_FORMAT,
    MediaError,
    out_of_memory,
    says_out_of_memory,
)
from photo_pipeline.media.files import media_error_from_os, open_original
from photo_pipeline.media.formats import (
    HEADER_SIZE,
    NON_TIFF_RAW_FORMATS,
    RAW_FORMATS,
    VIDEO_FORMATS,
    sniff,
)
from photo_pipeline.media.limits import DEFAULT_MAX_PIXELS
from photo_pipeline.media.phash import perceptual_hash
from photo_pipeline.media.poster import poster_frame
from photo_pipeline.media.raw import probe_raw, probe_tiff_family, raf_preview
from photo_pipeline.media.video import DEFAULT_TIME_LIMIT

# Workers render thousands of different files: libvips' operation cache would only pin
# decoded images and open files of photos that are never asked for again.
pyvips.cache_set_max(0)

# Bump when the rendering itself changes (not its settings): every rendition is stale.
RENDERER_VERSION = 1
FORMATS = {"jpeg": "image/jpeg", "webp": "image/webp", "avif": "image/avif"}
EXTENSIONS = {"jpeg": "jpg", "webp": "webp", "avif": "avif"}
# JPEG is the default: a 1440x960 preview of bench/import.py's photos encodes in ~7 ms
# (libjpeg-turbo, optimised Huffman tables: 4 ms more than without, for files 15%
# smaller) where WebP at effort 2 takes ~27 ms and AVIF ~110 ms, for files 4-7x smaller
# than JPEG's. Immich chose JPEG previews for the same reason.
DEFAULT_FORMAT = "jpeg"
# libwebp effort 2 made the same bytes (±1%) as the default 4 in a third of the time.
_WEBP_EFFORT = 2
_AVIF_EFFORT = 0  # libaom's fastest: AVIF is for small files, not for speed
BROKEN_ICC_PROFILE = "broken_icc_profile"


@dataclass(frozen=True)
class RenderSettings:
    """What renditions to make; ``fingerprint`` changes whenever the output would."""

    thumbnail_size: int = 256  # longest edge, pixels
    preview_size: int = 1440
    format: str = DEFAULT_FORMAT  # jpeg, webp or avif
    quality: int = 80
    max_pixels: int = DEFAULT_MAX_PIXELS  # larger originals are refused, not rendered
    video_time_limit: float = DEFAULT_TIME_LIMIT  # seconds to decode a poster frame

    def __post_init__(self) -> None:
        for name in ("thumbnail_size", "preview_size"):
            value = getattr(self, name)
            if not isinstance(value, int) or not 16 <= value <= 8192:
                raise ValueError(f"{name} must be 16..8192 pixels, got {value!r}")
        if self.format not in FORMATS:
            raise ValueError(f"format must be one of {sorted(FORMATS)}, got {self.format!r}")
        if not isinstance(self.quality, int) or not 1 <= self.quality <= 100:
            raise ValueError(f"quality must be 1..100, got {self.quality!r}")
        if not isinstance(self.max_pixels, int) or self.max_pixels <= 0:
            raise ValueError(f"max_pixels must be a positive number, got {self.max_pixels!r}")
        if not isinstance(self.video_time_limit, (int, float)) or self.video_time_limit <= 0:
            raise ValueError(f"video_time_limit must be positive, got {self.video_time_limit!r}")

    @property
    def sizes(self) -> dict[str, int]:
        """Rendition kind -> longest edge."""
        return {"thumbnail": self.thumbnail_size, "preview": self.preview_size}

    @property
    def extension(self) -> str:
        return EXTENSIONS[self.format]

    def fingerprint(self) -> str:
        """A short digest of everything that shapes the output (not the limits)."""
        limits = ("max_pixels", "video_time_limit")
        shape = {k: v for k, v in asdict(self).items() if k not in limits}
        shape["renderer"] = RENDERER_VERSION
        digest = hashlib.sha256(json.dumps(shape, sort_keys=True).encode())
        return digest.hexdigest()[:16]

    def to_params(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> RenderSettings:
        return cls(**params)


@dataclass(frozen=True)
class Rendition:
    kind: str
    format: str
    width: int
    height: int
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class RenderResult:
    renditions: tuple[Rendition, ...]
    phash: int  # of the thumbnail (media.phash)
    warnings: tuple[tuple[str, str], ...] = ()  # (code, message)


def render_file(path: Path | str, settings: RenderSettings) -> RenderResult:
    """Decode ``path`` once and encode every rendition of ``settings``; raises
    MediaError (corrupt_file, too_many_pixels, unsupported_format, …)."""
    path = Path(path)
    kind = _sniff(path)
    sizes = sorted(settings.sizes.items(), key=lambda item: -item[1])
    warnings: list[tuple[str, str]] = []
    try:
        if kind in VIDEO_FORMATS:
            largest = _decode_video(path, sizes[0][1], settings)
        elif kind in NON_TIFF_RAW_FORMATS:
            largest = _decode_other_raw(path, kind, sizes[0][1], settings.max_pixels, warnings)
        elif kind in ("tiff", "cr2"):
            largest = _decode_tiff_family(path, kind, sizes[0][1], settings.max_pixels, warnings)
        elif kind == "heif":
            largest = _decode_heif(path, sizes[0][1], settings.max_pixels, warnings)
        else:
            largest = _decode(path, sizes[0][1], settings.max_pixels, warnings)
        images = {sizes[0][0]: largest}
        for name, size in sizes[1:]:
            images[name] = largest.thumbnail_image(size, height=size, size="down").copy_memory()
        renditions = tuple(
            _encode(name, images[name], settings) for name, _ in settings.sizes.items()
        )
        phash = perceptual_hash(images["thumbnail"])
    except MemoryError as exc:
        raise MediaError(OUT_OF_MEMORY, f"{path}: out of memory while rendering") from exc
    except pyvips.Error as exc:
        if out_of_memory(exc):  # anywhere in libvips' message: the last line may not say it
            raise MediaError(OUT_OF_MEMORY, f"{path}: {_vips_message(exc, oom=True)}") from exc
        raise MediaError(CORRUPT_FILE, f"{path}: does not decode: {_vips_message(exc)}") from exc
    return RenderResult(renditions, phash, tuple(warnings))


# ── decoding ───────────────────────────────────────────────────────────────────
def _sniff(path: Path) -> str:
    with open_original(path) as fp:
        try:
            header = fp.read(HEADER_SIZE)
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
    if not header:
        raise MediaError(EMPTY_FILE, f"{path}: file is empty")
    kind = sniff(header)
    if kind.startswith("other:"):
        raise MediaError(UNSUPPORTED_FORMAT, f"{path}: content is {kind.removeprefix('other:')}")
    return kind


def _decode(
    path: Path, size: int, max_pixels: int, warnings: list[tuple[str, str]]
) -> pyvips.Image:
    """Shrink-on-load to fit ``size``, oriented, in sRGB, 8-bit, held in memory."""
    header = pyvips.Image.new_from_file(str(path), fail_on="error")  # the header only
    _check_pixels(header.width, header.height, max_pixels, path)
    # No colour management inside `thumbnail`: with an export profile it imports the
    # whole decode into the profile connection space before shrinking (3x slower on
    # 24 MP, bench/render.py). The embedded profile rides along as metadata and is
    # applied to the shrunk image instead.
    if header.get("vips-loader") == "jpegload":
        image = _jpeg_shrunk_on_load(path, max(header.width, header.height), size)
    else:
        image = pyvips.Image.thumbnail(str(path), size, height=size, size="down", fail_on="error")
    return _to_srgb8(_apply_profile(image, path, warnings)).copy_memory()


def _jpeg_shrunk_on_load(path: Path, longest: int, size: int) -> pyvips.Image:
    """A JPEG decoded at the smallest DCT scale (1/8, 1/4, 1/2) that still covers
    ``size``, as Pillow's ``draft`` does, then oriented and resized. libvips'
    ``thumbnail`` keeps another factor of 2 for its resize (a 6000-px photo is decoded
    at 3000 px for a 1440-px preview): 20% more CPU per photo (bench/import.py) for a
    difference not seen at 1440 px. The decode reads every byte whatever the scale,
    so a truncated file still fails here."""
    shrink = next((s for s in (8, 4, 2) if -(-longest // s) >= size), 1)
    image = pyvips.Image.new_from_file(str(path), shrink=shrink, fail_on="error").autorot()
    return image.thumbnail_image(size, height=size, size="down")


def _apply_profile(
    image: pyvips.Image, path: Path, warnings: list[tuple[str, str]]
) -> pyvips.Image:
    """Pixels in sRGB: transformed by their embedded ICC profile when lcms accepts it;
    with a broken one, taken as sRGB already (and a warning recorded)."""
    if image.get_typeof("icc-profile-data") == 0:
        return image  # none: sRGB by convention
    if _icc_profile_is_usable(image, path, warnings):
        try:
            return image.icc_transform("srgb", embedded=True)
        except pyvips.Error as exc:  # lcms reads it, but it does not fit these pixels
            warnings.append((BROKEN_ICC_PROFILE, f"{path}: {_vips_message(exc)}; assumed sRGB"))
    untagged = image.copy()
    untagged.remove("icc-profile-data")
    return untagged


def _decode_heif(
    path: Path, size: int, max_pixels: int, warnings: list[tuple[str, str]]
) -> pyvips.Image:
    """HEIF through libheif in pillow-heif (the libvips wheel has no HEVC decoder). It
    decodes at full size: HEVC has no scaled decode, and an embedded thumbnail (an
    iPhone's is 320x240) is too small for the preview, which needs the full decode
    anyway; the thumbnail is then resized from the preview in ~1 ms. libheif applies
    the transforms (irot/imir), so there is no EXIF orientation left to apply. libvips
    reads libheif's pixel buffer in place: no copy of the full-size image."""
    try:
        heif = pillow_heif.open_heif(str(path), convert_hdr_to_8bit=True)
        _check_pixels(heif.size[0], heif.size[1], max_pixels, path)
        pixels = heif.data  # the decode
    except MediaError:
        raise
    except (ValueError, RuntimeError, OSError, SyntaxError, EOFError, MemoryError) as exc:
        if out_of_memory(exc):
            raise MediaError(OUT_OF_MEMORY, f"{path}: HEIF decode: out of memory: {exc}") from exc
        raise MediaError(CORRUPT_FILE, f"{path}: HEIF data does not decode: {exc}") from exc
    width, height = heif.size
    bands = {"RGB": 3, "RGBA": 4}.get(heif.mode)
    if bands is None or heif.stride != width * bands:
        image = _from_pillow(heif.to_pillow())  # padded rows or another mode: via Pillow
    else:
        image = pyvips.Image.new_from_memory(pixels, width, height, bands, "uchar")
        image = image.copy(interpretation="srgb")
    profile = heif.info.get("icc_profile")
    if profile:
        image.set_type(pyvips.GValue.blob_type, "icc-profile-data", profile)
    # copy_memory before the buffer goes: `image` reads libheif's pixels in place
    image = image.thumbnail_image(size, height=size, size="down")
    return _to_srgb8(_apply_profile(image, path, warnings)).copy_memory()


def _from_pillow(picture: Image.Image) -> pyvips.Image:
    if picture.mode not in ("RGB", "RGBA"):
        picture = picture.convert("RGBA" if "A" in picture.getbands() else "RGB")
    image = pyvips.Image.new_from_memory(
        picture.tobytes(), picture.width, picture.height, len(picture.getbands()), "uchar"
    )
    return image.copy(interpretation="srgb")


def _icc_profile_is_usable(
    image: pyvips.Image, path: Path, warnings: list[tuple[str, str]]
) -> bool:
    """Whether lcms accepts the embedded profile; a broken one is recorded as a
    warning and the pixels are taken as sRGB (the photo still renders)."""
    data = image.get("icc-profile-data")
    try:
        ImageCms.ImageCmsProfile(io.BytesIO(data))
    except (OSError, ValueError, TypeError, ImageCms.PyCMSError) as exc:
        warnings.append(
            (BROKEN_ICC_PROFILE, f"{path}: embedded ICC profile unusable ({exc}); assumed sRGB")
        )
        return False
    return True


def _decode_video(path: Path, size: int, settings: RenderSettings) -> pyvips.Image:
    """The poster frame, already upright, sRGB and no larger than ``size``."""
    poster = poster_frame(
        path,
        max_size=size,
        max_pixels=settings.max_pixels,
        time_limit=settings.video_time_limit,
    )
    image = pyvips.Image.new_from_array(poster.pixels, interpretation="srgb")
    return image.cast("uchar").copy_memory()


def _decode_other_raw(
    path: Path, kind: str, size: int, max_pixels: int, warnings: list[tuple[str, str]]
) -> pyvips.Image:
    with open_original(path) as fp:
        file_size = os.fstat(fp.fileno()).st_size
        probe = probe_raw(kind, fp, path, file_size, max_pixels)
        # LibRaw refuses the file: a RAF still shows its embedded JPEG
        preview = raf_preview(fp, file_size) if kind == "raf" else None
    return _decode_raw(
        path, size, probe.orientation, max_pixels, warnings, preview, tiff_fallback=False
    )


def _decode_tiff_family(
    path: Path, kind: str, size: int, max_pixels: int, warnings: list[tuple[str, str]]
) -> pyvips.Image:
    with open_original(path) as fp:
        probe = probe_tiff_family(kind, fp, path, os.fstat(fp.fileno()).st_size, max_pixels)
    if probe is None or probe.format not in RAW_FORMATS:
        return _decode(path, size, max_pixels, warnings)  # a plain TIFF
    return _decode_raw(path, size, probe.orientation, max_pixels, warnings)


def _decode_raw(
    path: Path,
    size: int,
    orientation: int,
    max_pixels: int,
    warnings: list[tuple[str, str]],
    fallback_preview: bytes | None = None,
    *,
    tiff_fallback: bool = True,
) -> pyvips.Image:
    """A camera RAW: its embedded JPEG preview when it is at least ``size`` on its longest
    edge (no demosaicing), else a half-size LibRaw development."""
    import rawpy  # here: LibRaw and NumPy load only where a RAW is rendered

    try:
        with rawpy.RawPy() as raw:
            try:
                raw.open_file(str(path))
            except rawpy.LibRawUnsufficientMemoryError:
                raise  # no stand-in for the moment's shortage: tried again later
            except rawpy.LibRawError:
                if fallback_preview is not None:
                    return _decode_preview(fallback_preview, size, orientation)
                if not tiff_fallback:
                    raise
                # LibRaw refuses it (a CR2 without Canon raw data, say): the TIFF
                # structure's own first image is the preview to show.
                return _decode(path, size, max_pixels, warnings)
            try:
                thumb: Any = raw.extract_thumb()
            except (rawpy.LibRawNoThumbnailError, rawpy.LibRawUnsupportedThumbnailError):
                thumb = None
            if _large_jpeg(thumb, size):
                image = _decode_preview(thumb.data, size, orientation)
            else:
                pixels = raw.postprocess(half_size=True, use_camera_wb=True, output_bps=8)
                image = pyvips.Image.new_from_array(pixels, interpretation="srgb")
                image = image.thumbnail_image(size, height=size, size="down")
    except rawpy.LibRawUnsufficientMemoryError as exc:
        raise MediaError(OUT_OF_MEMORY, f"{path}: LibRaw ran out of memory: {exc}") from exc
    except rawpy.LibRawError as exc:
        raise MediaError(CORRUPT_FILE, f"{path}: RAW data does not decode: {exc}") from exc
    return _to_srgb8(image).copy_memory()


def _large_jpeg(thumb: Any, size: int) -> bool:
    """Whether LibRaw's thumbnail is a JPEG that fills ``size`` (else: develop the RAW)."""
    import rawpy  # loaded already: the caller opened the RAW with it

    if thumb is None or thumb.format != rawpy.ThumbFormat.JPEG:
        return False
    try:
        header = pyvips.Image.new_from_buffer(thumb.data, "")  # the header only
    except pyvips.Error:
        return False
    return bool(max(header.width, header.height) >= size)


def _decode_preview(data: bytes, size: int, orientation: int) -> pyvips.Image:
    image = pyvips.Image.thumbnail_buffer(data, size, height=size, size="down", no_rotate=True)
    return _to_srgb8(_orient(image, orientation)).copy_memory()  # previews rarely carry the tag


def _orient(image: pyvips.Image, orientation: int) -> pyvips.Image:
    if orientation in (2, 3, 4, 5, 6, 7, 8):
        image = image.copy()
        image.set_type(pyvips.GValue.gint_type, "orientation", orientation)
        return image.autorot()
    return image


def _to_srgb8(image: pyvips.Image) -> pyvips.Image:
    """8-bit sRGB (grey, 16-bit and CMYK-without-profile inputs included)."""
    if image.interpretation != "srgb" or image.format != "uchar":
        image = image.colourspace("srgb")
    if image.format != "uchar":
        image = image.cast("uchar")
    return image


def _check_pixels(width: int, height: int, max_pixels: int, path: Path) -> None:
    if width * height > max_pixels:
        raise MediaError(
            TOO_MANY_PIXELS, f"{path}: {width}x{height} = {width * height} pixels > {max_pixels}"
        )


def _vips_message(exc: pyvips.Error, *, oom: bool = False) -> str:
    # libvips' error buffer also holds warnings of earlier calls; the last line is ours,
    # unless it is a loader's "load error" after the line saying memory ran out (oom).
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if oom:
        lines = [line for line in lines if says_out_of_memory(line)] or lines
    return (lines[-1] if lines else "libvips error")[:300]


# ── encoding ───────────────────────────────────────────────────────────────────
def _encode(kind: str, image: pyvips.Image, settings: RenderSettings) -> Rendition:
    if settings.format == "jpeg":
        if image.hasalpha():
            image = image.flatten(background=[255, 255, 255])
        data = image.jpegsave_buffer(Q=settings.quality, keep="none", optimize_coding=True)
    elif settings.format == "avif":
        data = image.heifsave_buffer(
            Q=settings.quality, compression="av1", effort=_AVIF_EFFORT, keep="none"
        )
    else:
        data = image.webpsave_buffer(Q=settings.quality, keep="none", effort=_WEBP_EFFORT)
    return Rendition(kind, settings.format, image.width, image.height, data)
