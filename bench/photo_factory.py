"""Speed of the test photo factory (``tests.factories.photos.jpeg``), which the suite
calls thousands of times.

Run with ``.venv/bin/python -m bench.photo_factory [--photos 300] [--rounds 3]``. It
prints, per round, milliseconds per photo of the factory (picture, EXIF, JPEG file)
against a bare Pillow save of the same pictures (no EXIF) in the same run: read the
ratio, since the raw figures follow the machine's load. This replaces the suite's
wall-clock check (300 photos in < 20 s) in tests/unit/test_photo_factories.py.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from tests.factories import photos

from bench import _harness as h


def seconds(write: str, count: int) -> float:
    """Wall seconds of ``count`` photos written by the factory or by a bare save."""
    with tempfile.TemporaryDirectory(prefix="pp_bench_photo_factory_") as tmp:
        folder = Path(tmp)
        started = time.perf_counter()
        for seed in range(count):
            if write == "factory":
                photos.jpeg(folder / f"factory-{seed}.jpg", seed=seed)
            else:
                photos.picture(seed=seed).save(folder / f"bare-{seed}.jpg", "JPEG")
        return time.perf_counter() - started


def body(args: Namespace) -> None:
    n = args.photos
    h.heading(f"{n} photos of 640x480 per pass, {args.rounds} rounds (factory, then bare)")
    runs = h.alternate({w: lambda w=w: seconds(w, n) for w in ("factory", "bare")}, args.rounds)
    pairs = list(zip(runs["factory"], runs["bare"], strict=True))
    rows = [
        [str(r), f / n * 1000, b / n * 1000, f"{f / b:.2f}x"] for r, (f, b) in enumerate(pairs, 1)
    ]
    h.table(["round", "factory ms/photo", "bare save ms/photo", "factory / bare"], rows)
    median = h.figure("factory ms/photo", statistics.median(runs["factory"]) / n * 1000)
    factor = h.median_ratio(pairs, name="factory / bare")
    h.note(f"median: {median:.1f} ms a photo, {factor:.2f}x a bare save")


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--photos", type=int, default=300, help="photos per pass")
    parser.add_argument("--rounds", type=int, default=3, help="factory/bare pass pairs")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
