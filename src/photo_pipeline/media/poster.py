"""A video's poster frame: the picture that stands for it in thumbnails, previews and pHash.

``poster_frame(path, max_size=…)`` decodes the frame at min(1 s, 10% of the duration) —
past a fade from black, yet inside even a short clip — turns it as the player would
(display matrix) and returns it as 8-bit RGB no larger than ``max_size`` on its longest
edge (:class:`PosterFrame`). ``media.render`` makes the renditions from it.

Bounded three ways, because the input is untrusted:

* pixels: the stream's declared size is checked against ``max_pixels`` before decoding;
* work: at most ``_MAX_PACKETS`` packets are read and the deadline is checked per packet;
  FFmpeg's interrupt callback (PyAV ``timeout``) ends a demuxer stuck on I/O;
* time and memory, whatever happens inside FFmpeg: the decode runs in a child process
  (``media.bounded``) that is killed at ``time_limit`` (``decode_timeout``) and cannot
  grow its address space by more than a fixed budget.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import numpy as np

from photo_pipeline.media.bounded import run_bounded
from photo_pipeline.media.decode import check_pixels
from photo_pipeline.media.errors import (
    CORRUPT_FILE,
    DECODE_TIMEOUT,
    OUT_OF_MEMORY,
    UNSUPPORTED_FORMAT,
    MediaError,
    out_of_memory,
)
from photo_pipeline.media.files import media_error_from_os, open_original
from photo_pipeline.media.formats import HEADER_SIZE, VIDEO_FORMATS, sniff
from photo_pipeline.media.video import DEFAULT_TIME_LIMIT, display_width, open_container

if TYPE_CHECKING:  # PyAV loads when a video is opened (media.video)
    import av

_TARGET_SECONDS = 1.0
_TARGET_FRACTION = 0.1
# Enough to reach the target from its keyframe at 240 fps with a 4-second GOP.
_MAX_PACKETS = 1200


@dataclass(frozen=True)
class PosterFrame:
    """An upright 8-bit RGB frame (height x width x 3) taken at ``seconds``."""

    pixels: np.ndarray
    seconds: float

    @property
    def width(self) -> int:
        return int(self.pixels.shape[1])

    @property
    def height(self) -> int:
        return int(self.pixels.shape[0])


def poster_frame(
    path: Path | str,
    *,
    max_size: int,
    max_pixels: int,
    time_limit: float = DEFAULT_TIME_LIMIT,
) -> PosterFrame:
    """The poster frame of the video at ``path``; raises MediaError (``decode_timeout``,
    ``too_many_pixels``, ``corrupt_file``, ``unsupported_format`` for a file that is no
    video, …)."""
    return run_bounded(
        decode_poster,
        str(path),
        max_size,
        max_pixels,
        time_limit,
        time_limit=time_limit,
        what=f"{path}: poster frame",
    )


def decode_poster(path: str, max_size: int, max_pixels: int, time_limit: float) -> PosterFrame:
    """The work of :func:`poster_frame`, in the calling process (no watchdog)."""
    deadline = time.monotonic() + time_limit
    with open_original(path) as fp:
        try:
            kind = sniff(fp.read(HEADER_SIZE))
        except OSError as exc:
            raise media_error_from_os(exc, path) from exc
        if kind not in VIDEO_FORMATS:
            raise MediaError(UNSUPPORTED_FORMAT, f"{path}: content is {kind}, not a video")
        return _decode(fp, kind, Path(path), max_size, max_pixels, time_limit, deadline)


def _decode(
    fp: BinaryIO,
    kind: str,
    path: Path,
    max_size: int,
    max_pixels: int,
    time_limit: float,
    deadline: float,
) -> PosterFrame:
    import av

    try:
        with open_container(fp, kind, path, time_limit) as container:
            if not container.streams.video:
                raise MediaError(UNSUPPORTED_FORMAT, f"{path}: no video stream")
            stream = container.streams.video[0]
            context = stream.codec_context
            check_pixels(context.width, context.height, max_pixels, path)
            stream.thread_type = "AUTO"
            start = (
                float(stream.start_time * stream.time_base)
                if stream.start_time and stream.time_base
                else 0.0
            )
            target = _target_seconds(container, stream)
            frame = _frame_at(container, stream, start, target, deadline)
            if frame is None:
                raise MediaError(CORRUPT_FILE, f"{path}: no video frame decodes")
            seconds = max(0.0, float(frame.time or start) - start)
            width = display_width(frame.width, stream.sample_aspect_ratio)
            return PosterFrame(_upright_rgb(frame, width, max_size), round(seconds, 3))
    except MediaError:
        raise
    except (av.error.ExitError, TimeoutError) as exc:  # FFmpeg's interrupt, or our deadline
        raise MediaError(DECODE_TIMEOUT, f"{path}: decode exceeded {time_limit:g} s") from exc
    except (av.error.FFmpegError, ValueError, MemoryError) as exc:
        reason = getattr(exc, "strerror", None) or f"{type(exc).__name__}: {exc}"
        code = OUT_OF_MEMORY if out_of_memory(exc) else CORRUPT_FILE
        raise MediaError(code, f"{path}: video does not decode: {reason}") from exc


def _target_seconds(container: av.container.InputContainer, stream: av.VideoStream) -> float:
    import av

    if stream.duration is not None and stream.time_base:
        duration = float(stream.duration * stream.time_base)
    elif container.duration is not None:
        duration = container.duration / av.time_base
    else:
        return 0.0  # unknown length (a live stream's recording): the first frame
    return max(0.0, min(_TARGET_SECONDS, _TARGET_FRACTION * duration))


def _frame_at(
    container: av.container.InputContainer,
    stream: av.VideoStream,
    start: float,
    target: float,
    deadline: float,
) -> av.VideoFrame | None:
    """The first frame ``target`` seconds or more after ``start`` (the stream's first
    timestamp), else the last one decoded."""
    import av

    if target > 0 and stream.time_base:
        try:
            # to the keyframe at or before the target, then decode forward
            container.seek(int((start + target) / stream.time_base), stream=stream)
            frame = _decode_until(container, stream, start + target, deadline)
            if frame is not None:
                return frame
        except av.error.FFmpegError:
            pass  # unseekable
        # Without an index (MPEG-TS) a seek lands between keyframes and nothing decodes
        # until the next one, maybe never: decode from the start instead.
        container.seek(0)
    return _decode_until(container, stream, start + target, deadline)


def _decode_until(
    container: av.container.InputContainer,
    stream: av.VideoStream,
    moment: float,
    deadline: float,
) -> av.VideoFrame | None:
    chosen = None
    for count, packet in enumerate(container.demux(stream)):
        if count >= _MAX_PACKETS:
            break
        if time.monotonic() > deadline:
            raise TimeoutError  # reported with the path below
        for frame in packet.decode():
            chosen = frame
            if frame.time is None or frame.time >= moment - 1e-3:
                return frame
    return chosen


def _upright_rgb(frame: av.VideoFrame, width: int, max_size: int) -> np.ndarray:
    """RGB at most ``max_size`` on its longest edge, ``width`` wide before that (square
    pixels), turned by the frame's display matrix."""
    height = frame.height
    scale = min(1.0, max_size / max(width, height))
    rgb = frame.reformat(
        width=max(1, round(width * scale)),
        height=max(1, round(height * scale)),
        format="rgb24",
        interpolation="AREA",
    ).to_ndarray()
    # frame.rotation is FFmpeg's counter-clockwise angle; rot90's k counts the same way
    turns = round(frame.rotation / 90) % 4
    return np.ascontiguousarray(np.rot90(rgb, k=turns)) if turns else rgb
