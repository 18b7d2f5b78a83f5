"""Benchmark capture-date reading: the fast reader (Pillow/exifread EXIF, PyAV tags)
against exiftool kept running (media.exiftool), on plain camera JPEGs and on the files
whose date only exiftool finds (XMP, maker notes, QuickTime XMP).

Run with ``.venv/bin/python -m bench.dates [--quick]``. It prints files per second of:

1. plain JPEGs (3000x2000, camera EXIF with DateTimeOriginal):
   (a) the date alone: Pillow's EXIF block parsed into a capture time (what
       ``media.tags`` does) vs exiftool asked for the same date tags;
   (b) ``read_metadata`` as it runs (the fast reader; exiftool is not asked for these)
       vs ``read_metadata`` followed by an exiftool request, which is what asking
       exiftool for every JPEG would cost;
2. each kind of fallback file: ``read_metadata`` as it runs (fast reader, then
   exiftool) vs the fast reader alone (exiftool unavailable: the date is the mtime),
   and exiftool's request alone.

One thread, one exiftool process; rounds interleave the readers and the best round
counts (the machine is shared). Files are made once into /tmp/pp_bench_dates.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile
import time
from argparse import Namespace
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from PIL import Image
from tests.factories import dated, photos

from bench import _harness as h
from photo_pipeline.media import exiftool, read_metadata
from photo_pipeline.media.exiftool import ExiftoolPool
from photo_pipeline.media.hidden_dates import REQUEST
from photo_pipeline.media.tags import capture_time, tags_from_pillow

ROOT = Path(tempfile.gettempdir()) / "pp_bench_dates"
PLAIN_SIZE = (3000, 2000)
MTIME = datetime(2000, 1, 1)
FALLBACKS: dict[str, Callable[..., Path]] = {
    "JPEG, XMP date only": dated.jpeg_with_xmp_date,
    "PNG, XMP date only": dated.png_with_xmp_date,
    "JPEG, Pentax maker note": dated.jpeg_with_pentax_date,
    "JPEG, Panasonic maker note": dated.jpeg_with_panasonic_date,
    "MOV, XMP date only": dated.mov_with_xmp_date,
}


def make_files(plain: int, each: int) -> tuple[list[Path], dict[str, list[Path]]]:
    folder = ROOT / "plain"
    folder.mkdir(parents=True, exist_ok=True)
    jpegs = []
    for seed in range(plain):
        path = folder / f"IMG_{seed:04d}.JPG"
        if not path.exists():
            photos.jpeg(path, size=PLAIN_SIZE, seed=seed, iso=200, f_number=2.8)
        jpegs.append(path)
    fallbacks: dict[str, list[Path]] = {}
    for n, (kind, factory) in enumerate(FALLBACKS.items()):
        folder = ROOT / f"fallback{n}"
        folder.mkdir(parents=True, exist_ok=True)
        made = sorted(folder.iterdir())
        suffix = {"JPEG": ".JPG", "PNG": ".png", "MOV": ".mov"}[kind.split(",")[0]]
        while len(made) < each:
            made.append(factory(folder / f"f{len(made):04d}{suffix}", seed=len(made)))
        fallbacks[kind] = made[:each]
    return jpegs, fallbacks


def pillow_date(path: Path) -> object:
    with open(path, "rb") as fp:
        image = Image.open(io.BytesIO(fp.read(1 << 16)))  # the EXIF block is in the head
        return capture_time(tags_from_pillow(image.getexif()), path.name, MTIME)


def compare(
    title: str, readers: dict[str, Callable[[Path], object]], files: list[Path], rounds: int
) -> None:
    """Files/s of each reader, best of ``rounds`` rounds in turns (a busy moment hurts
    every reader alike), against the first reader's."""

    def files_per_second(read: Callable[[Path], object]) -> float:
        started = time.perf_counter()
        for path in files:
            read(path)
        return len(files) / (time.perf_counter() - started)

    cases = {name: lambda r=read: files_per_second(r) for name, read in readers.items()}
    rates = {name: max(done) for name, done in h.alternate(cases, rounds).items()}
    baseline = next(iter(rates.values()))
    h.heading(title)
    rows = [[name, rate, h.ratio(rate, baseline, name=name)] for name, rate in rates.items()]
    h.table(["reader", "files/s", "vs the first"], rows)


def body(args: Namespace) -> int:
    if dated.exiftool_path() is None:
        print("exiftool is not installed (apt-get install libimage-exiftool-perl)")
        return 1
    plain, each, rounds = (20, 10, 3) if args.quick else (100, 40, 5)
    jpegs, fallbacks = make_files(plain, each)

    pool = exiftool.shared_pool()
    pool.read_tags(str(jpegs[0]), REQUEST)  # started before timing: a worker keeps it
    missing = ExiftoolPool(str(ROOT / "no-exiftool"))
    logging.getLogger("photo_pipeline.media.exiftool").setLevel(logging.ERROR)

    def exiftool_date(path: Path) -> object:
        return pool.read_tags(str(path), REQUEST)

    def without_exiftool(path: Path) -> object:
        exiftool._shared[os.getpid()] = missing
        try:
            return read_metadata(path, isolate_video=True)
        finally:
            exiftool._shared[os.getpid()] = pool

    def metadata(path: Path) -> object:
        return read_metadata(path, isolate_video=True)

    def metadata_then_exiftool(path: Path) -> object:
        return read_metadata(path), pool.read_tags(str(path), REQUEST)

    print(f"exiftool {pool.executable}; {plain} plain JPEGs {PLAIN_SIZE[0]}x{PLAIN_SIZE[1]}")
    print(f"{each} files of each fallback kind; best of {rounds} interleaved rounds")
    readers = {"Pillow EXIF -> capture time": pillow_date, "exiftool": exiftool_date}
    compare("1a. plain JPEG, the capture date alone", readers, jpegs, rounds)
    readers = {
        "read_metadata (fast reader only: EXIF has the date)": metadata,
        "read_metadata + an exiftool request per file": metadata_then_exiftool,
    }
    compare("1b. plain JPEG, read_metadata", readers, jpegs, rounds)
    for kind, files in fallbacks.items():
        readers = {
            "fast reader alone (date: mtime)": without_exiftool,
            "read_metadata (fast reader, then exiftool)": metadata,
            "exiftool request alone": exiftool_date,
        }
        compare(f"2. {kind}", readers, files, rounds)
        found = read_metadata(files[0]).taken
        h.note(f"dated {found.local} from {found.source}")
    h.note(f"exiftool processes started: {h.figure('exiftool processes', pool.started)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer files and rounds")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
