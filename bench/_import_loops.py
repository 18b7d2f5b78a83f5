"""Photos and bare loops for ``bench.import``.

A module of its own so that a spawned process pool can import its functions by name
(``import`` is a keyword: ``bench.import`` cannot be imported as a module).

* the photo sets: 24-MP JPEGs (6000x4000, q90) from ``bench._photos``' photo-like
  generator, and iPhone-sized HEICs (4032x3024, HEVC in 512-px grid tiles, a 320-px
  embedded thumbnail, EXIF), each made once and reused;
* the bare loops: per photo only the essential work, with nothing of the pipeline
  around it (no database, no jobs, no atomic writes):
  read the bytes and BLAKE3-hash them, read the EXIF, decode once (shrink-on-load
  for JPEG: Pillow ``draft``; a full decode for HEIC: libheif cannot scale), encode a
  1440-px JPEG preview and a 256-px WebP thumbnail;
* the floor as a command: ``python -m bench._import_loops KIND FOLDER`` runs the bare
  loop over the folder's photos in a two-process pool of its own and prints, as JSON,
  the seconds its pool took to start and the loop's (``bench.import_command`` times
  the whole process).
"""

from __future__ import annotations

import io
import json
import math
import os
import sys
import time
from pathlib import Path

PREVIEW, THUMBNAIL, QUALITY = 1440, 256, 80
JPEG_SIZE = (6000, 4000)
HEIC_SIZE = (4032, 3024)  # an iPhone's 12 MP
HEIC_THUMBNAIL = 320  # what an iPhone embeds (320x240)
HEIC_TILE = 512  # iPhones store HEIC as a grid of 512x512 tiles
HEIC_ENCODER_PRESET = "fast"  # x265's default (medium) takes ~25 s a photo here


# ── photo sets ─────────────────────────────────────────────────────────────────
def write_jpeg(target: str, index: int) -> None:
    from bench._photos import write_jpeg

    write_jpeg(target, index, JPEG_SIZE)


def write_heic(target: str, index: int) -> None:
    import pillow_heif
    from tests.factories.photos import build_exif

    from bench._photos import picture

    partial = Path(target).with_name(f".{Path(target).name}.partial")
    exif = build_exif(orientation=6 if index % 4 == 0 else 1, gps=(48.85, 2.29, 35.0))
    pillow_heif.from_pillow(picture(10_000 + index, HEIC_SIZE)).save(
        partial,
        format="HEIF",
        quality=60,
        exif=exif.tobytes(),
        thumbnails=[HEIC_THUMBNAIL],
        tile_size=HEIC_TILE,
        enc_params={"preset": HEIC_ENCODER_PRESET},
    )
    os.replace(partial, target)


def ready(delay: float) -> int:
    """A task that makes a pool process start and import its libraries (``delay``
    keeps it busy, so that each process of a fresh pool takes one)."""
    import blake3  # noqa: F401
    import pillow_heif  # noqa: F401
    from PIL import Image  # noqa: F401

    time.sleep(delay)
    return os.getpid()


# ── bare loops ─────────────────────────────────────────────────────────────────
def _read_and_hash(path: str) -> bytes:
    import blake3

    with open(path, "rb") as fp:
        data = fp.read()
    blake3.blake3(data).hexdigest()
    return data


def _encode_both(preview: object) -> int:
    from PIL import Image

    assert isinstance(preview, Image.Image)
    preview.thumbnail((PREVIEW, PREVIEW))
    thumbnail = preview.copy()
    thumbnail.thumbnail((THUMBNAIL, THUMBNAIL))
    out = io.BytesIO()
    preview.save(out, "JPEG", quality=QUALITY)
    thumbnail.save(out, "WEBP", quality=QUALITY)
    return out.tell()


def bare_jpeg(path: str) -> int:
    """The essential work for one JPEG; returns the bytes encoded."""
    from PIL import Image, ImageOps

    data = _read_and_hash(path)
    with Image.open(io.BytesIO(data)) as image:
        image.getexif()
        # DCT scaling to the smallest size that still covers the preview's box
        scale = PREVIEW / max(image.size)
        image.draft("RGB", (math.ceil(image.width * scale), math.ceil(image.height * scale)))
        preview = ImageOps.exif_transpose(image)
    return _encode_both(preview)


def timed(kind: str, path: str) -> float:
    """One bare photo of ``kind`` ("jpeg" or "heic"); returns the CPU seconds it took
    (of this pool process, which runs one photo at a time)."""
    started = time.process_time()
    (bare_jpeg if kind == "jpeg" else bare_heic)(path)
    return time.process_time() - started


def bare_heic(path: str) -> int:
    """The essential work for one HEIC with pillow-heif: a full decode (libheif applies
    the orientation), then the same encodes."""
    import pillow_heif

    data = _read_and_hash(path)
    heif = pillow_heif.open_heif(io.BytesIO(data))
    heif.info.get("exif")
    return _encode_both(heif.to_pillow())


# ── the floor as a command ─────────────────────────────────────────────────────
PROCESSES = 2


def main(argv: list[str]) -> int:
    """The bare loop over every photo of a folder, as a process of its own: a
    two-process pool (spawned, as the worker's would be) started, then the loop."""
    from bench import _harness as h

    kind, folder = argv
    started = time.perf_counter()
    paths = sorted(str(p) for p in Path(folder).iterdir() if not p.name.startswith("."))
    with h.spawn_pool(PROCESSES) as pool:
        h.start_pool(pool, PROCESSES, 0.0, ready)
        looped = time.perf_counter()
        cpu = sum(pool.map(timed, [kind] * len(paths), paths))
        ended = time.perf_counter()
    print(json.dumps({"start": looped - started, "loop": ended - looped, "cpu": cpu}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
