"""``read_metadata``: what the library records about one photo or video file.

The format is recognised by content (``media.formats``), then read by the matching
reader: Pillow (JPEG, PNG, WebP, TIFF, HEIF, AVIF), ``media.raw`` (camera RAWs),
``media.video`` (PyAV: MP4, MOV, M4V, 3GP, MPEG-TS/M2TS, AVI, MKV, WebM). A capture
date they do not find (one kept in XMP, a maker note, QuickTime keys) is looked for with
exiftool (``media.hidden_dates``). Every reader fills the same :class:`MediaMetadata`;
``kind`` says ``"photo"`` or ``"video"`` and the video-only fields stay None for photos.
``content_identifier`` is Apple's Live Photo id, equal in the still (MakerNote,
``media.makernote``) and its MOV. A JPEG that is a Google/Samsung Motion Photo reports
where its clip lies in ``motion_video`` (``media.motion_photo``).
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO

from photo_pipeline.media.bounded import run_bounded
from photo_pipeline.media.capture_time import CaptureTime
from photo_pipeline.media.decode import Probe, probe_pillow
from photo_pipeline.media.errors import EMPTY_FILE, UNSUPPORTED_FORMAT, MediaError
from photo_pipeline.media.files import media_error_from_os, open_original
from photo_pipeline.media.formats import (
    HEADER_SIZE,
    NON_TIFF_RAW_FORMATS,
    VIDEO_FORMATS,
    sniff,
)
from photo_pipeline.media.hidden_dates import with_hidden_dates
from photo_pipeline.media.limits import DEFAULT_MAX_PIXELS
from photo_pipeline.media.makernote import apple_content_identifier
from photo_pipeline.media.motion_photo import EmbeddedVideo, embedded_video
from photo_pipeline.media.raw import probe_raw, probe_tiff_family
from photo_pipeline.media.tags import capture_time, gps_position
from photo_pipeline.media.video import (
    DEFAULT_TIME_LIMIT,
    content_identifier,
    probe_video,
    video_capture_time,
    video_make,
    video_model,
    video_position,
)

MAKER_NOTE = 0x927C


@dataclass(frozen=True)
class MediaMetadata:
    """Everything the library records about one photo's or video's content."""

    format: str
    mime: str
    width: int  # as displayed: EXIF orientation 5..8 / a video's 90° rotation swap them
    height: int
    orientation: int  # EXIF orientation of a photo; 1 for videos (width/height are turned)
    taken: CaptureTime
    make: str | None
    model: str | None
    lens: str | None
    focal_length_mm: float | None
    f_number: float | None
    exposure_seconds: float | None
    iso: int | None
    gps_latitude: float | None
    gps_longitude: float | None
    gps_altitude: float | None
    kind: str = "photo"  # or "video"
    duration: float | None = None  # seconds (videos)
    video_codec: str | None = None  # FFmpeg's codec name: h264, hevc, vp9… (videos)
    frame_rate: float | None = None  # frames per second (videos)
    content_identifier: str | None = None  # Apple's Live Photo id, equal in both halves
    motion_video: EmbeddedVideo | None = None  # the clip inside a Motion Photo JPEG


# The name callers used before videos; the same class.
PhotoMetadata = MediaMetadata


def read_metadata(
    path: Path,
    *,
    mtime: datetime | None = None,
    max_pixels: int = DEFAULT_MAX_PIXELS,
    time_limit: float = DEFAULT_TIME_LIMIT,
    isolate_video: bool = False,
) -> MediaMetadata:
    """Identify, sanity-check and describe the photo or video at ``path``; raises
    MediaError.

    ``time_limit`` (seconds) bounds exiftool's look for a hidden date, and a video's
    probe through FFmpeg's interrupt callback, which demuxers check between reads.
    ``isolate_video`` runs the probe in a child process killed at the limit
    (``media.bounded``), which also bounds a decoder stuck inside FFmpeg's stream probe
    or a read blocked in the kernel, for about a fork's cost (milliseconds; see
    bench/video.py)."""
    path = Path(path)
    with open_original(path) as fp:
        try:
            file_size = os.fstat(fp.fileno()).st_size
            file_mtime = os.fstat(fp.fileno()).st_mtime
            header = fp.read(HEADER_SIZE)
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
        if file_size == 0 or not header:
            raise MediaError(EMPTY_FILE, f"{path}: file is empty")
        kind = sniff(header)
        if kind.startswith("other:"):
            what = kind.removeprefix("other:")
            what = (
                "not a recognised image or video" if what == "unknown" else f"{what}, not supported"
            )
            raise MediaError(UNSUPPORTED_FORMAT, f"{path}: content is {what}")
        if mtime is None:
            # the file's own mtime: an instant (capture_time.file_time)
            mtime = datetime.fromtimestamp(file_mtime, UTC)
        if kind in VIDEO_FORMATS:
            return _video(kind, fp, path, file_size, mtime, max_pixels, time_limit, isolate_video)
        return _photo(kind, fp, path, file_size, mtime, max_pixels, time_limit)


def _photo(
    kind: str,
    fp: BinaryIO,
    path: Path,
    file_size: int,
    mtime: datetime,
    max_pixels: int,
    time_limit: float,
) -> MediaMetadata:
    probe: Probe | None = None
    if kind in ("tiff", "cr2"):
        probe = probe_tiff_family(kind, fp, path, file_size, max_pixels)
    elif kind in NON_TIFF_RAW_FORMATS:
        probe = probe_raw(kind, fp, path, file_size, max_pixels)
    if probe is None:
        probe = probe_pillow(kind, fp, path, file_size, max_pixels)
    motion = None
    if kind == "jpeg":
        try:
            motion = embedded_video(fp, file_size)
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
    swap = probe.orientation >= 5
    latitude, longitude, altitude = gps_position(probe.tags)
    return MediaMetadata(
        format=probe.format,
        mime=probe.mime,
        width=probe.height if swap else probe.width,
        height=probe.width if swap else probe.height,
        orientation=probe.orientation,
        taken=with_hidden_dates(capture_time(probe.tags, path.name, mtime), fp, path, time_limit),
        **asdict(probe.camera),
        gps_latitude=latitude,
        gps_longitude=longitude,
        gps_altitude=altitude,
        content_identifier=apple_content_identifier(probe.tags.photo(MAKER_NOTE)),
        motion_video=motion,
    )


def _video(
    kind: str,
    fp: BinaryIO,
    path: Path,
    file_size: int,
    mtime: datetime,
    max_pixels: int,
    time_limit: float,
    isolate: bool,
) -> MediaMetadata:
    args = (kind, fp, path, file_size, max_pixels, time_limit)
    if isolate:  # the child inherits the open file
        probe = run_bounded(probe_video, *args, time_limit=time_limit, what=f"{path}: probe")
    else:
        probe = probe_video(*args)
    position = video_position(probe.tags)
    return MediaMetadata(
        format=probe.format,
        mime=probe.mime,
        width=probe.width,
        height=probe.height,
        orientation=1,
        taken=with_hidden_dates(
            video_capture_time(probe.tags, path.name, mtime), fp, path, time_limit
        ),
        make=video_make(probe.tags),
        model=video_model(probe.tags),
        lens=None,
        focal_length_mm=None,
        f_number=None,
        exposure_seconds=None,
        iso=None,
        gps_latitude=position.latitude if position else None,
        gps_longitude=position.longitude if position else None,
        gps_altitude=position.altitude if position else None,
        kind="video",
        duration=probe.duration,
        video_codec=probe.video_codec,
        frame_rate=probe.frame_rate,
        content_identifier=content_identifier(probe.tags),
    )
