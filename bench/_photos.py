"""Photos and pool-side helpers for ``bench.ingest``.

A module of its own so that spawned process pools can import its functions by name:

* the photo generator: 12-megapixel JPEGs with varied EXIF (dates, cameras, GPS,
  orientation), photo-like (a smooth colour field plus film-grain noise, ~2 MB at
  quality 90) yet cheap to encode; every photo is a pure function of its index;
* the bare BLAKE3 loop that the scan's ``hash_file`` is compared with;
* the item probe: ``inspect_file`` wrapped so that a pool process reports, with each
  result, the seconds it spent in ``hash_file`` and ``read_metadata``.
"""

from __future__ import annotations

import dataclasses
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import blake3
from PIL import Image, ImageChops
from tests.factories.photos import build_exif

from photo_pipeline.media import hash_file
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library.catalog import FileReport

SIZE = (4000, 3000)
QUALITY = 90
GRAIN_SIGMA = 5  # standard deviation of the luminance noise, in 8-bit levels
READ_CHUNK = 1 << 20  # the bare loop reads like hash_file: 1 MiB at a time
GENERATOR = {"size": list(SIZE), "quality": QUALITY, "grain": GRAIN_SIGMA, "version": 1}

CAMERAS = (
    ("Canon", "EOS R5", "RF24-105mm F4 L IS USM"),
    ("NIKON CORPORATION", "NIKON Z 6", "NIKKOR Z 24-70mm f/4 S"),
    ("SONY", "ILCE-7M3", "FE 35mm F1.8"),
    ("FUJIFILM", "X-T4", "XF16-55mmF2.8 R LM WR"),
    ("Apple", "iPhone 13 Pro", "iPhone 13 Pro back triple camera 5.7mm f/1.5"),
)
OFFSETS = ("+00:00", "+01:00", "+02:00", "-05:00", "+09:00", None)
FIRST_DAY = datetime(2015, 1, 1)
SPAN_SECONDS = 10 * 365 * 86_400


# ── photos ─────────────────────────────────────────────────────────────────────
@dataclasses.dataclass(frozen=True)
class PhotoSpec:
    relative: str  # YYYY/MM/IMG_nnnnn.jpg, by capture month
    exif: dict[str, Any]  # keyword arguments of build_exif


def photo_spec(index: int) -> PhotoSpec:
    """The path and EXIF of photo ``index`` (deterministic)."""
    rnd = random.Random(index)
    taken = FIRST_DAY + timedelta(seconds=rnd.randrange(SPAN_SECONDS))
    make, model, lens = CAMERAS[rnd.randrange(len(CAMERAS))]
    gps = None
    if rnd.random() < 0.4:
        gps = (rnd.uniform(-60, 70), rnd.uniform(-180, 180), round(rnd.uniform(0, 2500), 1))
    exif = {
        "taken": taken.strftime("%Y:%m:%d %H:%M:%S"),
        "offset": rnd.choice(OFFSETS),
        "subsec": f"{rnd.randrange(1000):03d}",
        "make": make,
        "model": model,
        "lens": lens,
        "focal_length": rnd.choice((24, 35, 50, 70, 105)),
        "f_number": rnd.choice((1.8, 2.8, 4.0, 5.6, 8.0)),
        "exposure": rnd.choice(("1/60", "1/125", "1/250", "1/1000")),
        "iso": rnd.choice((100, 200, 400, 800, 3200)),
        "orientation": rnd.choice((1, 1, 1, 1, 1, 1, 1, 1, 6, 8)),
        "gps": gps,
    }
    return PhotoSpec(f"{taken:%Y}/{taken:%m}/IMG_{index:05d}.jpg", exif)


@cache
def _grain() -> Image.Image:
    """Luminance noise around 128, made once per process (the costly part): generated at
    half size and enlarged, so that it looks like sensor grain rather than pure noise."""
    half = Image.effect_noise((SIZE[0] // 2, SIZE[1] // 2), GRAIN_SIGMA)
    grain = half.resize(SIZE, Image.Resampling.BILINEAR)
    return Image.merge("RGB", (grain, grain, grain))


def picture(index: int) -> Image.Image:
    """A smooth colour field (a random 5x4 image enlarged bicubically) plus the grain."""
    colours = Image.frombytes("RGB", (5, 4), random.Random(f"pixels-{index}").randbytes(60))
    field = colours.resize(SIZE, Image.Resampling.BICUBIC)
    return ImageChops.add(field, _grain(), scale=1.0, offset=-128)


def write_photo(root: str, index: int) -> tuple[str, int]:
    """Write photo ``index`` below ``root`` unless it is there; returns (path, size).
    The file appears under its name only once complete."""
    spec = photo_spec(index)
    target = Path(root, spec.relative)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        partial = target.with_name(f".{target.name}.partial")  # hidden: the scan skips it
        exif = build_exif(**spec.exif)
        picture(index).save(partial, "JPEG", quality=QUALITY, exif=exif)
        os.replace(partial, target)
    return spec.relative, target.stat().st_size


def write_photos(root: str, indexes: list[int]) -> list[tuple[str, int]]:
    return [write_photo(root, index) for index in indexes]


# ── hashing ────────────────────────────────────────────────────────────────────
def ready(delay: float = 0.0) -> int:
    """A task that makes a pool process start (and import this module)."""
    time.sleep(delay)
    return os.getpid()


def bare_blake3(path: str) -> str:
    """BLAKE3 of a file with nothing around it: plain open() and read() by 1 MiB."""
    hasher = blake3.blake3()
    with open(path, "rb") as fp:
        while chunk := fp.read(READ_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def bare_blake3_readinto(path: str) -> str:
    """The same, reading into one reused 1 MiB buffer (no new bytes object per chunk)."""
    hasher = blake3.blake3()
    buffer = bytearray(READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb") as fp:
        while n := fp.readinto(buffer):
            hasher.update(view[:n])
    return hasher.hexdigest()


def pipeline_hash(path: str) -> str:
    """The scan's hashing, as ``inspect_file`` calls it."""
    return hash_file(Path(path))


def peak_memory_kb() -> int:
    """VmHWM: this process's own peak RSS (ru_maxrss also counts, after an exec, the
    memory of the parent that forked it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


# ── item probe ─────────────────────────────────────────────────────────────────
_ORIGINAL_INSPECT = scan.inspect_file_within  # taken before ingest.py points the scan here
_ITEM = threading.local()
_PATCH_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class ProbedReport(FileReport):
    """A FileReport (the catalogue records it as usual) with the item's timings: wall
    and CPU seconds of the item, of hash_file and of read_metadata."""

    timings: tuple[tuple[str, float], ...] = ()
    started: float = 0.0  # time.time() when the item began, comparable across processes
    ended: float = 0.0
    pid: int = 0
    peak_kb: int = 0  # VmHWM of the pool process after the item


def _timed(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _ITEM.seconds[name] += time.perf_counter() - wall
            _ITEM.seconds[f"{name}_cpu"] += time.process_time() - cpu

    timed.probed = True  # type: ignore[attr-defined]
    return timed


def _install_item_probe() -> None:
    """Time the scan module's hash_file and read_metadata in this process (once)."""
    with _PATCH_LOCK:
        if not getattr(scan.hash_file, "probed", False):
            scan.hash_file = _timed(scan.hash_file, "hash")
            scan.read_metadata = _timed(scan.read_metadata, "metadata")


def probed_inspect_file(
    allowed: Sequence[str], params: dict[str, Any], item_key: str
) -> scan.Inspected:
    """``scan.inspect_file_within`` with its hashing and metadata reading timed (the
    report it returns is a ProbedReport)."""
    _install_item_probe()
    _ITEM.seconds = dict.fromkeys(("hash", "hash_cpu", "metadata", "metadata_cpu"), 0.0)
    started, wall, cpu = time.time(), time.perf_counter(), time.process_time()
    inspected = _ORIGINAL_INSPECT(allowed, params, item_key)
    report = inspected.report
    _ITEM.seconds["item"] = time.perf_counter() - wall
    _ITEM.seconds["item_cpu"] = time.process_time() - cpu
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    probed = ProbedReport(
        **fields,
        timings=tuple(_ITEM.seconds.items()),
        started=started,
        ended=time.time(),
        pid=os.getpid(),
        peak_kb=peak_memory_kb(),
    )
    return dataclasses.replace(inspected, report=probed)
