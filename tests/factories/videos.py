"""Write real, small video files (good and broken) for tests, with PyAV.

Every factory takes a target ``path`` (a file path, or an existing directory to write a
default name into) and returns the path written. Frames are a moving gradient with a red
top-left quadrant (as stored), so no frame is black and a turned poster frame shows
which way it was turned. ``seed`` changes the colours, so different seeds give different
bytes and pictures.

Container tags go in ``metadata`` (FFmpeg names: ``creation_time``, ``location``, or any
key, e.g. Apple's ``com.apple.quicktime.*``: MOV/MP4 are written with
``movflags=use_metadata_tags`` so that custom keys land in the ``keys``/``ilst`` atoms
exactly where iPhones put them). ``rotation`` is the clockwise turn a player applies
(90 for an iPhone portrait clip), written as the track's display matrix.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np

from tests.factories import photos

RED = (230, 20, 20)
# container format for each suffix (FFmpeg muxer names)
_MUXERS = {
    ".mp4": "mp4",
    ".mov": "mov",
    ".m4v": "ipod",
    ".3gp": "3gp",
    ".mkv": "matroska",
    ".webm": "webm",
    ".avi": "avi",
    ".ts": "mpegts",
    ".mts": "mpegts",
    ".m2ts": "mpegts",
}
_ISOBMFF = {".mp4", ".mov", ".m4v", ".3gp"}
_QUIET = {"libx265": {"x265-params": "log-level=error"}, "libx264": {"preset": "veryfast"}}


def has_encoder(name: str) -> bool:
    """Whether the bundled FFmpeg can encode with ``name`` (e.g. libx265)."""
    return name in av.codecs_available


def _target(path: Path | str, default_name: str) -> Path:
    path = Path(path)
    path = path / default_name if path.is_dir() else path
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def frame_pixels(size: tuple[int, int], index: int, seed: int = 0) -> np.ndarray:
    """Frame ``index``: a gradient moving one step per frame, red top-left quadrant."""
    width, height = size
    rnd = random.Random(seed)
    base = np.array([rnd.randrange(40, 200) for _ in range(3)], dtype=np.int32)
    x = np.arange(width, dtype=np.int32)[None, :, None]
    y = np.arange(height, dtype=np.int32)[:, None, None]
    pixels = (base + x * 3 + y * 2 + index * 4) % 256
    pixels = np.broadcast_to(pixels, (height, width, 3)).astype(np.uint8).copy()
    pixels[: height // 2, : width // 2] = RED
    return pixels


def video(
    path: Path | str,
    *,
    codec: str = "libx264",
    size: tuple[int, int] = (64, 48),
    seconds: float = 2.0,
    fps: int = 25,
    rotation: int = 0,
    metadata: Mapping[str, str] | None = None,
    seed: int = 0,
    pix_fmt: str = "yuv420p",
    sample_aspect_ratio: Fraction | None = None,
    default_name: str = "clip.mp4",
) -> Path:
    """A video of ``seconds`` at ``fps``; the container follows the file's suffix.
    ``sample_aspect_ratio`` makes its pixels non-square (4/3: 48 stored show as 64)."""
    target = _target(path, default_name)
    suffix = target.suffix.lower()
    options: dict[str, str] = {}
    if suffix in _ISOBMFF:
        options["movflags"] = "use_metadata_tags"
    if suffix == ".m2ts":
        options["mpegts_m2ts_mode"] = "1"  # 192-byte packets, as AVCHD cameras write
    with av.open(str(target), "w", format=_MUXERS[suffix], options=options) as container:
        for key, value in (metadata or {}).items():
            container.metadata[key] = value
        stream: Any = container.add_stream(codec, rate=fps, options=_QUIET.get(codec, {}))
        stream.width, stream.height = size
        stream.pix_fmt = pix_fmt
        if sample_aspect_ratio is not None:
            stream.codec_context.sample_aspect_ratio = sample_aspect_ratio
        if codec == "libx265" and suffix in (".mov", ".mp4"):
            stream.codec_tag = "hvc1"  # what Apple writes and plays
        if rotation:
            stream.set_display_rotation(-rotation)  # PyAV counts counter-clockwise
        for index in range(round(seconds * fps)):
            frame = av.VideoFrame.from_ndarray(frame_pixels(size, index, seed), format="rgb24")
            container.mux(stream.encode(frame))
        container.mux(stream.encode(None))
    return target


def h264_mp4(path: Path | str, **kwargs: Any) -> Path:
    """An H.264 MP4 (``creation_time`` in UTC unless ``metadata`` says otherwise)."""
    kwargs.setdefault("metadata", {"creation_time": "2023-07-14T08:15:30.000000Z"})
    return video(path, codec="libx264", default_name="clip_h264.mp4", **kwargs)


def hevc_mp4(path: Path | str, **kwargs: Any) -> Path:
    """An HEVC (libx265) MP4 with a UTC ``creation_time``."""
    kwargs.setdefault("metadata", {"creation_time": "2023-07-14T08:15:30.000000Z"})
    return video(path, codec="libx265", default_name="clip_hevc.mp4", **kwargs)


def iphone_mov(
    path: Path | str,
    *,
    codec: str = "libx265",
    creation_time: str | None = "2023-07-14T08:15:30.000000Z",
    creationdate: str | None = "2023-07-14T10:15:30+0200",
    location: str | None = "+52.5163+013.3777+034.000/",
    content_identifier: str | None = "9A1F1E0C-5B1E-4C43-9F0B-2D5C4E6A7B81",
    make: str | None = "Apple",
    model: str | None = "iPhone 15 Pro",
    rotation: int = 90,
    **kwargs: Any,
) -> Path:
    """A MOV as an iPhone writes it: HEVC, portrait (turned 90°), UTC creation_time and
    Apple's keys (local creationdate with offset, ISO 6709 location, content identifier)."""
    tags = {
        "creation_time": creation_time,
        "com.apple.quicktime.creationdate": creationdate,
        "com.apple.quicktime.location.ISO6709": location,
        "com.apple.quicktime.content.identifier": content_identifier,
        "com.apple.quicktime.make": make,
        "com.apple.quicktime.model": model,
    }
    metadata = {key: value for key, value in tags.items() if value is not None}
    return video(
        path,
        codec=codec,
        rotation=rotation,
        metadata=metadata,
        default_name="IMG_0001.MOV",
        **kwargs,
    )


def android_mp4(
    folder: Path | str,
    *,
    name: str = "VID_20230714_101530.mp4",
    metadata: Mapping[str, str] | None = None,
    **kwargs: Any,
) -> Path:
    """An Android-style clip whose only date is its file name (no creation_time)."""
    return video(Path(folder) / name, metadata=metadata or {}, **kwargs)


def apple_makernote(content_identifier: str) -> bytes:
    """An Apple MakerNote holding only ContentIdentifier (tag 0x0011), as iOS writes it:
    ``Apple iOS\\0``, version 1, ``MM``, then a big-endian IFD whose offsets count from
    the start of the MakerNote."""
    value = content_identifier.encode("ascii") + b"\x00"
    header = b"Apple iOS\x00\x00\x01MM"
    offset = len(header) + 2 + 12 + 4
    entry = (0x0011).to_bytes(2, "big") + (2).to_bytes(2, "big")
    entry += len(value).to_bytes(4, "big") + offset.to_bytes(4, "big")
    return header + (1).to_bytes(2, "big") + entry + bytes(4) + value


def live_photo(
    folder: Path | str,
    *,
    stem: str = "IMG_0001",
    content_identifier: str = "9A1F1E0C-5B1E-4C43-9F0B-2D5C4E6A7B81",
    still: str = "heic",
    seed: int = 0,
) -> tuple[Path, Path]:
    """A Live Photo pair: ``<stem>.HEIC`` (or ``.JPG``) with the content identifier in its
    Apple MakerNote, and ``<stem>.MOV`` with it in its QuickTime keys."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    exif = {
        "make": "Apple",
        "model": "iPhone 15 Pro",
        "extra_exif": {0x927C: apple_makernote(content_identifier)},
    }
    if still == "heic":
        image = photos.heic(folder / f"{stem}.HEIC", size=(64, 48), seed=seed, **exif)
    else:
        image = photos.jpeg(folder / f"{stem}.JPG", size=(64, 48), seed=seed, **exif)
    motion = iphone_mov(
        folder / f"{stem}.MOV",
        codec="libx264",
        content_identifier=content_identifier,
        seconds=1.5,
        seed=seed,
    )
    return image, motion


def _motion_photo_xmp(video_length: int, style: str) -> bytes:
    if style == "microvideo":
        body = (
            '<rdf:Description rdf:about="" xmlns:GCamera="http://ns.google.com/photos/1.0/camera/"'
            ' GCamera:MicroVideo="1" GCamera:MicroVideoVersion="1"'
            f' GCamera:MicroVideoOffset="{video_length}"'
            ' GCamera:MicroVideoPresentationTimestampUs="500000"/>'
        )
    else:
        body = (
            '<rdf:Description rdf:about=""'
            ' xmlns:GCamera="http://ns.google.com/photos/1.0/camera/"'
            ' xmlns:Container="http://ns.google.com/photos/1.0/container/"'
            ' xmlns:Item="http://ns.google.com/photos/1.0/container/item/"'
            ' GCamera:MotionPhoto="1" GCamera:MotionPhotoVersion="1"'
            ' GCamera:MotionPhotoPresentationTimestampUs="500000">'
            "<Container:Directory><rdf:Seq>"
            '<rdf:li rdf:parseType="Resource"><Container:Item'
            ' Item:Mime="image/jpeg" Item:Semantic="Primary" Item:Length="0"'
            ' Item:Padding="0"/></rdf:li>'
            '<rdf:li rdf:parseType="Resource"><Container:Item'
            f' Item:Mime="video/mp4" Item:Semantic="MotionPhoto" Item:Length="{video_length}"'
            ' Item:Padding="0"/></rdf:li>'
            "</rdf:Seq></Container:Directory></rdf:Description>"
        )
    return (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/">'
        '<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">'
        f"{body}</rdf:RDF></x:xmpmeta>"
    ).encode()


def motion_photo(
    path: Path | str, *, style: str = "container", seed: int = 0, **exif: Any
) -> tuple[Path, int, int]:
    """A Google/Samsung Motion Photo: a JPEG with XMP (``style`` ``container`` for Motion
    Photo format 1, ``microvideo`` for the older Pixel one), an MP4 appended after it.
    Returns the path and the clip's (offset, length)."""
    target = _target(path, f"PXL_20230714_101530{seed:03d}.MP.jpg")
    clip = video(target.with_suffix(".part.mp4"), seconds=1.0, seed=seed)
    clip_bytes = clip.read_bytes()
    clip.unlink()
    exif.setdefault("make", "Google")
    exif.setdefault("model", "Pixel 8")
    picture = photos.picture((64, 48), seed)
    picture.save(
        target,
        "JPEG",
        exif=photos.build_exif(**exif),
        xmp=_motion_photo_xmp(len(clip_bytes), style),
    )
    still = target.read_bytes()
    target.write_bytes(still + clip_bytes)
    return target, len(still), len(clip_bytes)


# --- broken files -------------------------------------------------------------------------


def truncated_mp4(path: Path | str, *, keep: float = 0.5) -> Path:
    """An MP4 cut before its ``moov`` atom (it follows the media data): no index at all."""
    target = _target(path, "truncated.mp4")
    video(target, seconds=1.0)
    data = target.read_bytes()
    moov = data.index(b"moov") - 4
    target.write_bytes(data[: min(moov, max(32, int(len(data) * keep)))])
    return target


def huge_dimensions(path: Path | str, *, size: tuple[int, int] = (100_000, 100_000)) -> Path:
    """An AVI of raw 64x48 frames whose headers (``avih``, the ``strf`` bitmap header)
    claim ``size``: raw video has no in-band header, so the container's word is all there is.
    """
    target = _target(path, "huge.avi")
    video(target, codec="rawvideo", pix_fmt="gray", seconds=0.2, fps=10)
    data = bytearray(target.read_bytes())
    width, height = (value.to_bytes(4, "little") for value in size)
    avih = data.index(b"avih") + 8  # dwWidth, dwHeight are its 9th and 10th words
    data[avih + 32 : avih + 40] = width + height
    strf = data.index(b"strf") + 8  # BITMAPINFOHEADER: biSize, biWidth, biHeight
    data[strf + 4 : strf + 12] = width + height
    target.write_bytes(bytes(data))
    return target


def sparse(path: Path | str, *, size: int = 4 << 30, header: bytes | None = None) -> Path:
    """A ``size``-byte sparse file (no disk used): an MP4 ``ftyp`` and ``mdat`` header
    claiming the rest, then zeros (no ``moov``)."""
    target = _target(path, "sparse.mp4")
    if header is None:
        ftyp = b"\x00\x00\x00\x18ftypisom\x00\x00\x02\x00isommp41"
        header = ftyp + b"\x00\x00\x00\x01mdat" + (size - len(ftyp)).to_bytes(8, "big")
    with target.open("wb") as out:
        out.write(header)
        out.truncate(size)
    return target
