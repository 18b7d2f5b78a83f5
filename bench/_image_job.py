"""Job handlers and item functions for ``bench.worker``.

A module of its own so that a spawned process pool can import the item functions by
name, and so that ``photo-pipeline worker --import bench._image_job`` (with the
repository root on ``PYTHONPATH``) serves the same job types. Importing it registers
the handlers on the process-wide registry; ``handlers`` is a private registry with the
same entries, for in-process workers.
"""

from __future__ import annotations

import os
import random
import time
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops, ImageOps

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import HandlerRegistry, registry

NOOP_JOB = "bench.noop"
THUMBNAIL_JOB = "bench.thumbnail"
WARMUP_JOB = "bench.warmup"
THUMBNAIL_BOX = (256, 256)
ORIENTATION_TAG = 0x0112
ORIENTATIONS = (1, 6, 8, 3)  # upright, rotated 90° cw / ccw, upside down
NOISE_MARGIN = 256

# Process ids that ran the warm-up job's items.
WARM_PIDS: set[int] = set()


# ── test photos ────────────────────────────────────────────────────────────────
@cache
def _noise(width: int, height: int) -> Image.Image:
    return Image.effect_noise((width + NOISE_MARGIN, height + NOISE_MARGIN), 48)


@cache
def _gradients(width: int, height: int) -> tuple[Image.Image, Image.Image]:
    linear = Image.linear_gradient("L").resize((width, height))
    radial = Image.radial_gradient("L").resize((width, height))
    return linear, radial


def make_photo(path: str, index: int, size: tuple[int, int]) -> int:
    """Write a JPEG (quality 90) of gradients and sensor-like noise, different for
    each ``index``, with an EXIF orientation; returns its size in bytes."""
    width, height = size
    rng = random.Random(index)
    noise = _noise(width, height)
    linear, radial = _gradients(width, height)

    def grain() -> Image.Image:
        x, y = rng.randrange(NOISE_MARGIN), rng.randrange(NOISE_MARGIN)
        return noise.crop((x, y, x + width, y + height))

    red = ImageChops.add(linear, grain(), scale=1.6)
    green = ImageChops.blend(radial, grain(), 0.35)
    blue = ImageChops.difference(linear.transpose(Image.Transpose.FLIP_LEFT_RIGHT), grain())
    exif = Image.Exif()
    exif[ORIENTATION_TAG] = ORIENTATIONS[index % len(ORIENTATIONS)]
    Image.merge("RGB", (red, green, blue)).save(path, "JPEG", quality=90, exif=exif)
    return Path(path).stat().st_size


# ── item work ─────────────────────────────────────────────────────────────────
def warm_item(params: dict[str, Any], key: str) -> int:
    """Warm-up: wait (so that each process of a fresh pool gets one of these), then
    make a thumbnail; returns the process id."""
    time.sleep(params["sleep"])
    make_thumbnail(key, params["out_dir"])
    return os.getpid()


def spin(count: int) -> int:
    """Pure-Python CPU work, to see how parallel this machine's cores really are."""
    total = 0
    for i in range(count):
        total += i * i
    return total


def noop_item(params: dict[str, Any], key: str) -> None:
    """An item that does nothing: what is left to measure is the coordination."""


def make_thumbnail(source: str, out_dir: str) -> tuple[int, int]:
    """Decode a JPEG shrunk on load (DCT scaling), fit it in 256×256, turn it upright
    by its EXIF orientation and save it as WebP. Returns the thumbnail's size."""
    with Image.open(source) as image:
        image.draft("RGB", THUMBNAIL_BOX)  # decode at 1/2, 1/4 or 1/8 scale
        image.thumbnail(THUMBNAIL_BOX)
        upright = ImageOps.exif_transpose(image)
    upright.save(Path(out_dir) / f"{Path(source).stem}.webp", "WEBP", quality=80)
    return upright.size


def thumbnail_item(params: dict[str, Any], key: str) -> tuple[int, int]:
    """The item function of a thumbnail job: ``key`` is the photo's path."""
    return make_thumbnail(key, params["out_dir"])


def noop_job(ctx: JobContext) -> None:
    ctx.map(noop_item)


def thumbnail_job(ctx: JobContext) -> None:
    ctx.map(thumbnail_item)


def warmup_job(ctx: JobContext) -> None:
    ctx.map(warm_item, on_result=lambda _key, pid: WARM_PIDS.add(pid))


def register(target: HandlerRegistry) -> HandlerRegistry:
    target.register(NOOP_JOB, noop_job)
    target.register(THUMBNAIL_JOB, thumbnail_job)
    target.register(WARMUP_JOB, warmup_job)
    return target


handlers = register(HandlerRegistry())
register(registry)
