"""``read_metadata``: format, pixel size, orientation, capture time, camera and GPS of a photo."""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path

from photo_pipeline.media.capture_time import CaptureTime
from photo_pipeline.media.decode import Probe, probe_pillow
from photo_pipeline.media.errors import EMPTY_FILE, UNSUPPORTED_FORMAT, MediaError
from photo_pipeline.media.files import media_error_from_os, open_original
from photo_pipeline.media.formats import HEADER_SIZE, sniff
from photo_pipeline.media.raw import probe_tiff_family
from photo_pipeline.media.tags import capture_time, gps_position

DEFAULT_MAX_PIXELS: int = 200_000_000


@dataclass(frozen=True)
class PhotoMetadata:
    """Everything the library records about one photo's content."""

    format: str
    mime: str
    width: int  # after applying orientation (5..8 swap width and height)
    height: int
    orientation: int
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


def read_metadata(
    path: Path, *, mtime: datetime | None = None, max_pixels: int = DEFAULT_MAX_PIXELS
) -> PhotoMetadata:
    """Identify, sanity-check and describe the photo at ``path``; raises MediaError."""
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
            what = "not a recognised image" if what == "unknown" else f"{what}, not supported"
            raise MediaError(UNSUPPORTED_FORMAT, f"{path}: content is {what}")
        probe: Probe | None = None
        if kind in ("tiff", "cr2"):
            probe = probe_tiff_family(kind, fp, path, file_size, max_pixels)
        if probe is None:
            probe = probe_pillow(kind, fp, path, file_size, max_pixels)
    if mtime is None:
        # the file's own mtime, as this machine's naive local time like a camera clock
        mtime = datetime.fromtimestamp(file_mtime)
    swap = probe.orientation >= 5
    latitude, longitude, altitude = gps_position(probe.tags)
    camera = probe.camera
    return PhotoMetadata(
        format=probe.format,
        mime=probe.mime,
        width=probe.height if swap else probe.width,
        height=probe.width if swap else probe.height,
        orientation=probe.orientation,
        taken=capture_time(probe.tags, path.name, mtime),
        **asdict(camera),
        gps_latitude=latitude,
        gps_longitude=longitude,
        gps_altitude=altitude,
    )
