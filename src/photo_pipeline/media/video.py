"""Video metadata with PyAV (FFmpeg): size as displayed, duration, codec, frame rate and the
container's tags, interpreted like a photo's EXIF.

``read_metadata(path)`` (media.metadata) recognises a video by its content, probes it
here (``probe_video``) and returns the same ``MediaMetadata`` as for a photo, with
``kind="video"`` and:

* ``width``/``height`` as displayed: non-square pixels (an anamorphic 1440x1080 AVCHD
  clip shows 1920 wide) are stretched, and the track's rotation (its ``tkhd`` matrix, e.g.
  an iPhone portrait clip) swaps them; ``orientation`` stays 1;
* ``duration`` (seconds), ``video_codec`` (FFmpeg's name: ``h264``, ``hevc``…),
  ``frame_rate`` (frames per second), all None when the container does not say;
* ``taken``: Apple's ``com.apple.quicktime.creationdate`` (local time with its offset,
  source ``quicktime_local``), else a QuickTime ``date`` (``©day``) with an offset (the
  same), else QuickTime/MP4 ``creation_time`` (UTC, source ``quicktime_utc``:
  ``media.places`` finds the local time from the zone at the GPS position), else a
  ``date`` without offset, else a date in the file name (``VID_20230714_101530``,
  ``PXL_…``), else mtime; ``media.hidden_dates`` may find a better one (XMP, AVCHD);
* GPS from ISO 6709 (``com.apple.quicktime.location.ISO6709``, else ``location``);
* ``make``/``model`` from Apple's or Android's keys (or QuickTime ``©mak``/``©mod``);
* ``content_identifier``: Apple's ``com.apple.quicktime.content.identifier``, shared by
  the two halves of a Live Photo.

Only headers are read (FFmpeg's stream probe), never a whole decode. The probe runs
under FFmpeg's interrupt callback (PyAV ``timeout``): a demuxer stuck reading gives up
after ``time_limit`` seconds with ``decode_timeout``. Decoding frames (the poster) runs in
a killable child process instead: see ``media.poster``.

FFmpeg gets the file we opened and checked (``/dev/fd/N``), never the name (a file named
``http:…`` is no URL to us), with the demuxer of the sniffed format forced and only the
``file`` protocol allowed: a playlist or concat script cannot make it open anything else.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from photo_pipeline.media.capture_time import (
    CaptureTime,
    capture_time_from_filename,
    file_time,
    parse_exif_datetime,
)
from photo_pipeline.media.decode import check_pixels
from photo_pipeline.media.errors import (
    CORRUPT_FILE,
    DECODE_TIMEOUT,
    OUT_OF_MEMORY,
    UNSUPPORTED_FORMAT,
    MediaError,
    out_of_memory,
)
from photo_pipeline.media.files import media_error_from_os
from photo_pipeline.media.formats import MIME_TYPES
from photo_pipeline.media.iso6709 import Position, parse_iso6709
from photo_pipeline.media.isobmff import display_rotation

if TYPE_CHECKING:  # PyAV loads when a video is opened: most processes see none
    import av

DEFAULT_TIME_LIMIT: float = 30.0
_ISOBMFF_FORMATS = frozenset({"mp4", "mov", "m4v", "3gp"})
# FFmpeg's demuxer for each video format media.formats recognises
DEMUXERS = {
    **dict.fromkeys(_ISOBMFF_FORMATS, "mov"),
    "mpegts": "mpegts",  # 188- or 192-byte packets alike (media.formats)
    "avi": "avi",
    "mkv": "matroska",
    "webm": "matroska",
}
# FFmpeg writes a missing QuickTime date as the epoch of its clock: no capture time at all.
_NO_DATE = (datetime(1904, 1, 1), datetime(1970, 1, 1))

APPLE_CREATIONDATE = "com.apple.quicktime.creationdate"
APPLE_LOCATION = "com.apple.quicktime.location.ISO6709"
APPLE_CONTENT_IDENTIFIER = "com.apple.quicktime.content.identifier"
_MAKE_KEYS = ("com.apple.quicktime.make", "com.android.manufacturer", "make")
_MODEL_KEYS = ("com.apple.quicktime.model", "com.android.model", "model")
_LOCATION_KEYS = (APPLE_LOCATION, "location", "location-eng")


@dataclass(frozen=True)
class VideoProbe:
    """What FFmpeg's probe says about one video, before tags are interpreted."""

    format: str
    mime: str
    width: int  # as displayed (rotation applied)
    height: int
    rotation: int  # clockwise degrees a player turns the stored frames by
    duration: float | None
    video_codec: str
    frame_rate: float | None
    tags: Mapping[str, str]  # container tags, then the video stream's where missing


def probe_video(
    kind: str, fp: BinaryIO, path: Path, file_size: int, max_pixels: int, time_limit: float
) -> VideoProbe:
    """Probe the video at ``path`` (``fp`` is it, opened); raises MediaError."""
    with open_container(fp, kind, path, time_limit) as container:
        if not container.streams.video:
            raise MediaError(UNSUPPORTED_FORMAT, f"{path}: {kind} without a video stream")
        stream = container.streams.video[0]
        width, height = stream.codec_context.width, stream.codec_context.height
        if width <= 0 or height <= 0:
            # FFmpeg drops a size it cannot allocate (beyond about 16k x 16k) as well as
            # a missing one: either way there is no picture to show
            raise MediaError(
                CORRUPT_FILE, f"{path}: no usable frame size (missing, or beyond FFmpeg's limits)"
            )
        check_pixels(width, height, max_pixels, path)
        width = display_width(width, stream.sample_aspect_ratio)
        tags = {**stream.metadata, **container.metadata}
        duration = _duration(stream, container)
        codec = stream.codec_context.name
        rate = stream.average_rate or stream.guessed_rate
    rotation = display_rotation(fp, file_size) if kind in _ISOBMFF_FORMATS else 0
    if rotation in (90, 270):
        width, height = height, width
    return VideoProbe(
        format=kind,
        mime=MIME_TYPES[kind],
        width=width,
        height=height,
        rotation=rotation,
        duration=duration,
        video_codec=codec,
        frame_rate=round(float(rate), 3) if rate else None,
        tags=tags,
    )


def open_container(
    fp: BinaryIO, kind: str, path: Path, time_limit: float
) -> av.container.InputContainer:
    """Open the already opened ``fp`` (a ``kind`` video) in FFmpeg; raises MediaError."""
    import av

    source = f"/dev/fd/{fp.fileno()}" if os.path.isdir("/dev/fd") else f"file:{path}"
    started = time.monotonic()
    try:
        return av.open(
            source,
            format=DEMUXERS[kind],
            options={"protocol_whitelist": "file"},
            timeout=(time_limit, time_limit),
        )
    except av.error.FFmpegError as exc:
        # an interrupted probe often reports the data it did not get as invalid
        if isinstance(exc, av.error.ExitError) or time.monotonic() - started >= time_limit:
            raise MediaError(DECODE_TIMEOUT, f"{path}: probe exceeded {time_limit:g} s") from exc
        raise _failure(exc, path) from exc


def display_width(width: int, sample_aspect_ratio: Fraction | None) -> int:
    """The width of ``width`` pixels of the given shape (width/height) shown square."""
    if not sample_aspect_ratio or sample_aspect_ratio == 1:
        return width
    return max(1, round(width * sample_aspect_ratio))


def _duration(stream: Any, container: Any) -> float | None:
    import av

    if stream.duration is not None and stream.time_base:
        seconds = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        seconds = container.duration / av.time_base
    else:
        return None
    return round(seconds, 3) if seconds > 0 else None


def _failure(exc: av.error.FFmpegError, path: Path) -> MediaError:
    import av

    if (
        isinstance(exc, OSError)
        and exc.errno is not None
        and not isinstance(exc, av.error.InvalidDataError)
    ):
        return media_error_from_os(exc, path)
    # FFmpeg names the source (/dev/fd/N): say the file instead
    reason = exc.strerror or type(exc).__name__
    if out_of_memory(exc):  # av.error.MemoryError (ENOMEM): the moment's, not the file's
        return MediaError(OUT_OF_MEMORY, f"{path}: does not open as video: {reason}")
    return MediaError(CORRUPT_FILE, f"{path}: does not open as video: {reason}")


# ── tags ──────────────────────────────────────────────────────────────────────
def video_capture_time(tags: Mapping[str, str], name: str, mtime: datetime) -> CaptureTime:
    """Apple creationdate (local + offset), a QuickTime ``date`` with its offset, QuickTime
    creation_time (UTC), a ``date`` without offset (floating), file name, then mtime."""
    apple = parse_exif_datetime(tags.get(APPLE_CREATIONDATE))
    if apple is not None:
        local, offset = apple
        return CaptureTime(local, offset, "quicktime_local")
    # FFmpeg's "date": QuickTime's ©day or a "date" key, local time as cameras and some
    # Android apps write it
    dated = parse_exif_datetime(tags.get("date"))
    if dated is not None and dated[1] is not None:
        return CaptureTime(dated[0], dated[1], "quicktime_local")
    utc = _utc_creation_time(tags.get("creation_time"))
    if utc is not None:
        return CaptureTime(utc, 0, "quicktime_utc")
    if dated is not None:
        return CaptureTime(dated[0], None, "quicktime_local")
    from_name = capture_time_from_filename(name)
    if from_name is not None:
        return CaptureTime(from_name, None, "filename")
    return file_time(mtime)


def _utc_creation_time(text: str | None) -> datetime | None:
    parsed = parse_exif_datetime(text)
    if parsed is None:
        return None
    moment, offset = parsed
    if offset:  # QuickTime stores UTC; a writer that added an offset meant it
        zone = timezone(timedelta(minutes=offset))
        moment = moment.replace(tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
    if moment.replace(microsecond=0) in _NO_DATE:
        return None
    return moment


def video_position(tags: Mapping[str, str]) -> Position | None:
    """The first parseable ISO 6709 location, Apple's key first."""
    for key in _LOCATION_KEYS:
        position = parse_iso6709(tags.get(key))
        if position is not None:
            return position
    return None


def first_text(tags: Mapping[str, str], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = (tags.get(key) or "").strip("\x00 \t\r\n")
        if value:
            return value
    return None


def video_make(tags: Mapping[str, str]) -> str | None:
    return first_text(tags, _MAKE_KEYS)


def video_model(tags: Mapping[str, str]) -> str | None:
    return first_text(tags, _MODEL_KEYS)


def content_identifier(tags: Mapping[str, str]) -> str | None:
    return first_text(tags, (APPLE_CONTENT_IDENTIFIER,))
