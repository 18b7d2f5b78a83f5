"""Write near copies of one photo-like scene for the tests of perceptual hashes and
near-duplicate groups: an original and its resized, re-encoded, cropped and panned
copies; other seeds give other scenes."""

from __future__ import annotations

import random
from pathlib import Path

from PIL import Image, ImageChops, ImageDraw, ImageEnhance, ImageFilter


def scene(seed: int, size: tuple[int, int] = (680, 510)) -> Image.Image:
    """A photo-like picture: a smooth colour field, soft blobs and grain."""
    rnd = random.Random(seed)
    width, height = size
    field = Image.frombytes("RGB", (6, 4), rnd.randbytes(72))
    field = field.resize(size, Image.Resampling.BICUBIC)
    draw = ImageDraw.Draw(field)
    for _ in range(5):
        x, y, r = (
            rnd.randrange(width),
            rnd.randrange(height),
            rnd.randrange(width // 12, width // 4),
        )
        draw.ellipse((x - r, y - r, x + r, y + r), fill=tuple(rnd.randrange(256) for _ in "rgb"))
    field = field.filter(ImageFilter.GaussianBlur(width / 200))
    grain = Image.effect_noise(size, 8).convert("RGB")
    return ImageChops.add(field, grain, scale=1.0, offset=-128)


def write_near_copies(folder: Path, seed: int) -> dict[str, Path]:
    """An original and its near copies: resized, re-encoded, cropped by 5% of its area
    (at a corner and centred), and a burst of three shots panning 1-2% each."""
    folder.mkdir(parents=True, exist_ok=True)
    wide = scene(seed)
    width, height = 640, 480
    original = wide.crop((20, 15, 20 + width, 15 + height))
    dx, dy = round(width * 0.025), round(height * 0.025)  # 0.975² ≈ 95% of the area
    made = {
        "original": (original, 90),
        "resized": (original.resize((320, 240), Image.Resampling.LANCZOS), 85),
        "q30": (original, 30),
        "crop_corner": (original.crop((0, 0, width - dx, height - dy)), 88),
        "crop_centre": (original.crop((dx // 2, dy // 2, width - dx // 2, height - dy // 2)), 88),
    }
    for shot in (1, 2):
        moved = wide.crop(
            (20 + 7 * shot, 15 + 4 * shot, 20 + 7 * shot + width, 15 + 4 * shot + height)
        )
        made[f"burst{shot}"] = (ImageEnhance.Brightness(moved).enhance(1 + 0.02 * shot), 88)
    paths = {}
    for name, (image, quality) in made.items():
        paths[name] = folder / f"s{seed}_{name}.jpg"
        image.save(paths[name], quality=quality)
    return paths
