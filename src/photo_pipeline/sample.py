"""A generated sample library, so that a newcomer can try photo-pipeline at once."""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from pathlib import Path

from PIL import ExifTags, Image, ImageDraw

CAMERAS = [("Canon", "EOS R5"), ("Apple", "iPhone 14 Pro"), ("FUJIFILM", "X-T5")]


def write_sample(folder: Path, count: int = 60, *, seed: int = 0) -> list[Path]:
    """Write ``count`` small JPEGs with EXIF (dates, cameras, some GPS) into ``folder``,
    plus two exact copies, two resized copies (near duplicates) and one broken file,
    as a camera dump would have."""
    rng = random.Random(seed)
    start = datetime(2023, 6, 1, 9, 0)
    written = []
    for n in range(count):
        taken = start + timedelta(hours=rng.randrange(24 * 60))
        make, model = CAMERAS[n % len(CAMERAS)]
        path = folder / f"{taken:%Y-%m}" / f"IMG_{n:04d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        _picture(rng).save(path, quality=85, exif=_exif(taken, make, model, rng))
        written.append(path)
    copies = folder / "copies"
    copies.mkdir(exist_ok=True)
    for original in written[:2]:
        (copies / original.name).write_bytes(original.read_bytes())
    edits = folder / "edits"
    edits.mkdir(exist_ok=True)
    for original in written[:2]:
        # Near duplicates: resized and re-encoded, as a phone's "share" would.
        with Image.open(original) as image:
            exif = image.getexif()
            small = image.resize((image.width * 3 // 4, image.height * 3 // 4))
        small.save(edits / f"{original.stem}_small.jpg", quality=70, exif=exif)
    (folder / "broken.jpg").write_bytes(written[0].read_bytes()[:500])  # truncated
    return written


def _picture(rng: random.Random) -> Image.Image:
    image = Image.new("RGB", (320, 240), tuple(rng.randrange(256) for _ in range(3)))
    draw = ImageDraw.Draw(image)
    for _ in range(6):
        box = sorted(rng.sample(range(320), 2)), sorted(rng.sample(range(240), 2))
        color = tuple(rng.randrange(256) for _ in range(3))
        draw.ellipse((box[0][0], box[1][0], box[0][1], box[1][1]), fill=color)
    return image


def _exif(taken: datetime, make: str, model: str, rng: random.Random) -> Image.Exif:
    exif = Image.Exif()
    exif[ExifTags.Base.Make] = make
    exif[ExifTags.Base.Model] = model
    details = exif.get_ifd(ExifTags.IFD.Exif)
    details[ExifTags.Base.DateTimeOriginal] = f"{taken:%Y:%m:%d %H:%M:%S}"
    details[ExifTags.Base.OffsetTimeOriginal] = "+02:00"
    if rng.random() < 0.5:
        gps = exif.get_ifd(ExifTags.IFD.GPSInfo)
        latitude, longitude = 48.85 + rng.random() / 10, 2.35 + rng.random() / 10
        gps[ExifTags.GPS.GPSLatitudeRef] = "N"
        gps[ExifTags.GPS.GPSLatitude] = _degrees(latitude)
        gps[ExifTags.GPS.GPSLongitudeRef] = "E"
        gps[ExifTags.GPS.GPSLongitude] = _degrees(longitude)
    return exif


def _degrees(value: float) -> tuple[float, float, float]:
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    return (float(degrees), float(minutes), round(((value - degrees) * 60 - minutes) * 60, 4))
