"""The photo-like JPEGs the benches decode (ingest, places, render, import): a smooth
colour field plus film grain, ~2 MB at 12 MP and quality 90, yet cheap to encode; EXIF
from the test factories (``tests.factories.photos.build_exif``). Each photo is a pure
function of its index. A module of its own so that spawned pools import it by name.

* ``write_photo(s)``: bench.ingest's set (4000x3000, varied EXIF: dates, cameras, GPS,
  orientation), also scanned by bench.places;
* ``write_jpeg``: bench.render's and bench.import's photos of a given size (a GPS fix,
  every fifth one turned).
"""

from __future__ import annotations

import dataclasses
import os
import random
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

from PIL import Image, ImageChops
from tests.factories.photos import build_exif

SIZE = (4000, 3000)
QUALITY = 90
GRAIN_SIGMA = 5  # standard deviation of the luminance noise, in 8-bit levels
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


@cache
def _grain(size: tuple[int, int]) -> Image.Image:
    """Luminance noise around 128, made once per process and size (the costly part):
    generated at half size and enlarged, so that it looks like sensor grain rather
    than pure noise."""
    half = Image.effect_noise((size[0] // 2, size[1] // 2), GRAIN_SIGMA)
    grain = half.resize(size, Image.Resampling.BILINEAR)
    return Image.merge("RGB", (grain, grain, grain))


def picture(index: int, size: tuple[int, int] = SIZE) -> Image.Image:
    """A smooth colour field (a random 5x4 image enlarged bicubically) plus the grain."""
    colours = Image.frombytes("RGB", (5, 4), random.Random(f"pixels-{index}").randbytes(60))
    field = colours.resize(size, Image.Resampling.BICUBIC)
    return ImageChops.add(field, _grain(size), scale=1.0, offset=-128)


def save_whole(image: Image.Image, target: Path, **options: Any) -> None:
    """Save under a hidden name (never scanned), then rename: a photo appears under its
    name only once complete."""
    partial = target.with_name(f".{target.name}.partial")
    image.save(partial, **options)
    os.replace(partial, target)


def write_jpeg(target: str, index: int, size: tuple[int, int]) -> None:
    exif = build_exif(orientation=6 if index % 5 == 4 else 1, gps=(48.85, 2.29, 35.0))
    save_whole(picture(index, size), Path(target), format="JPEG", quality=QUALITY, exif=exif)


# ── bench.ingest's set ─────────────────────────────────────────────────────────
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


def write_photo(root: str, index: int) -> tuple[str, int]:
    """Write photo ``index`` below ``root`` unless it is there; returns (path, size)."""
    spec = photo_spec(index)
    target = Path(root, spec.relative)
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        exif = build_exif(**spec.exif)
        save_whole(picture(index), target, format="JPEG", quality=QUALITY, exif=exif)
    return spec.relative, target.stat().st_size


def write_photos(root: str, indexes: list[int]) -> list[tuple[str, int]]:
    return [write_photo(root, index) for index in indexes]
