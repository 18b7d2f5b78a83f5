"""Speed of the test photo factory (``tests.factories.photos.jpeg``), which the suite
calls thousands of times.

Run with ``.venv/bin/python -m bench.photo_factory [--photos 300] [--rounds 3]``. It
prints, per round, milliseconds per photo of the factory (picture, EXIF, JPEG file)
against a bare Pillow save of the same pictures (no EXIF) in the same run: read the
ratio, since the raw figures follow the machine's load. This replaces the suite's
wall-clock check (300 photos in < 20 s) in tests/unit/test_photo_factories.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from tests.factories import photos

from bench._report import heading, median_ratio, note, table


def factory_seconds(folder: Path, count: int) -> float:
    started = time.perf_counter()
    for seed in range(count):
        photos.jpeg(folder / f"factory-{seed}.jpg", seed=seed)
    return time.perf_counter() - started


def bare_seconds(folder: Path, count: int) -> float:
    started = time.perf_counter()
    for seed in range(count):
        photos.picture(seed=seed).save(folder / f"bare-{seed}.jpg", "JPEG")
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--photos", type=int, default=300, help="photos per pass")
    parser.add_argument("--rounds", type=int, default=3, help="factory/bare pass pairs")
    args = parser.parse_args(argv)
    n = args.photos
    heading(f"{n} photos of 640x480 per pass, {args.rounds} rounds (factory, then bare)")
    rows, pairs = [], []
    for round_ in range(1, args.rounds + 1):
        with tempfile.TemporaryDirectory(prefix="pp_bench_photo_factory_") as tmp:
            factory = factory_seconds(Path(tmp), n)
            bare = bare_seconds(Path(tmp), n)
        pairs.append((factory, bare))
        rows.append([str(round_), factory / n * 1000, bare / n * 1000, f"{factory / bare:.2f}x"])
    table(["round", "factory ms/photo", "bare save ms/photo", "factory / bare"], rows)
    median_factory = statistics.median(f for f, _ in pairs) / n * 1000
    note(f"median: {median_factory:.1f} ms a photo, {median_ratio(pairs):.2f}x a bare save; "
         f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
