"""Benchmark zones and places: lookups per second, and what they add to a first scan.

Run with ``.venv/bin/python -m bench.places [--quick] [--photos DIR]``. It prints:

1. lookups per second on 100,000 random positions (uniform on the sphere, so about
   70% at sea): the time zone (``media.places.zone_at`` against a bare ``tzfpy``
   loop), the place (``places_at`` in one batch and in scan-sized batches of 50,
   against a bare query of the gazetteer's k-d tree, and ``reverse_geocode.search``
   where that package is installed: the ``places-data`` extra), and ``locate_many``
   (zone, offset and place) in batches of 50 as the scan calls it; plus the one-time
   load of the place data;
2. memory: the peak RSS (VmHWM) the first place lookup adds to a fresh interpreter
   (the gazetteer and tzfpy's polygons), against loading ``reverse_geocode`` (what the
   pipeline used before: scipy and 155,000 dicts) where it is installed;
3. a first scan of bench.ingest's photo set (12-megapixel JPEGs, 40% with GPS)
   with zones and places and without them (``locate_reports`` replaced by the
   identity), each in a fresh interpreter (so the place data is loaded in the timed
   run, as in a real first scan), alternating A B B A; medians of wall time and of
   CPU seconds (worker process + its pool); target: under 5% added.
"""

from __future__ import annotations

import argparse
import math
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench import _harness as h

POSITIONS = 100_000
SCAN_BATCH = 50  # the worker's default flush size: one locate_reports call per batch
TARGET = 0.05
CHILD_TIMEOUT_S = 1800


def random_positions(count: int, seed: int = 9) -> list[tuple[float, float]]:
    rnd = random.Random(seed)
    return [
        (math.degrees(math.asin(rnd.uniform(-1, 1))), rnd.uniform(-180, 180)) for _ in range(count)
    ]


def rate(function: Callable[[], Any], count: int) -> tuple[float, float]:
    started = time.perf_counter()
    function()
    seconds = time.perf_counter() - started
    return count / seconds, seconds


def batches(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def reverse_geocode_installed() -> bool:
    import importlib.util

    return importlib.util.find_spec("reverse_geocode") is not None


# ── 1. lookups ─────────────────────────────────────────────────────────────────
def lookup_section() -> None:
    from datetime import datetime

    import tzfpy

    from photo_pipeline.media import place_index
    from photo_pipeline.media.capture_time import CaptureTime
    from photo_pipeline.media.places import locate_many, places_at, warm_up, zone_at

    h.heading(f"1. lookups on {POSITIONS:,} random positions (one process, one core)")
    positions = random_positions(POSITIONS)
    started = time.perf_counter()
    warm_up()
    load_s = time.perf_counter() - started
    zones: list[str | None] = []
    rows = []
    bare_zone, _ = rate(lambda: [tzfpy.get_tz(lon, lat) for lat, lon in positions], POSITIONS)
    ours_zone, _ = rate(
        lambda: zones.extend(zone_at(lat, lon) for lat, lon in positions), POSITIONS
    )
    rows.append(["zone: bare tzfpy.get_tz loop", bare_zone, "1.00x"])
    rows.append(
        ["zone: zone_at (validates, checks tz data)", ours_zone, h.ratio(ours_zone, bare_zone)]
    )
    tree = place_index.load().tree
    bare_place, _ = rate(lambda: tree.query(place_index.unit_vectors(positions), k=1), POSITIONS)
    ours_place, _ = rate(lambda: places_at(positions, zones), POSITIONS)
    ours_small, _ = rate(
        lambda: [
            places_at(chunk, zone_chunk)
            for chunk, zone_chunk in zip(
                batches(positions, SCAN_BATCH), batches(zones, SCAN_BATCH), strict=True
            )
        ],
        POSITIONS,
    )
    rows.append(["place: bare k-d tree query, one batch", bare_place, "1.00x"])
    if reverse_geocode_installed():
        import reverse_geocode

        reverse_geocode.get((1.0, 1.0))  # its load is not timed
        before, _ = rate(lambda: reverse_geocode.search(positions), POSITIONS)
        rows.append(["place: reverse_geocode.search (before), one batch", before,
                     h.ratio(before, bare_place)])  # fmt: skip
    rows.append(["place: places_at, one batch", ours_place, h.ratio(ours_place, bare_place)])
    rows.append(
        [f"place: places_at, batches of {SCAN_BATCH}", ours_small, h.ratio(ours_small, bare_place)]
    )
    taken = CaptureTime(datetime(2024, 7, 15, 12, 0), None, "exif_original")
    captures = [(taken, lat, lon) for lat, lon in positions]
    both, seconds = rate(
        lambda: [locate_many(chunk) for chunk in batches(captures, SCAN_BATCH)], POSITIONS
    )
    rows.append([f"zone + offset + place: locate_many, batches of {SCAN_BATCH}", both, ""])
    h.table(["lookup", "per second", "vs bare"], rows)  # fmt: skip
    at_sea = sum(1 for zone in zones if zone is None or zone.startswith("Etc/"))
    h.note(f"{at_sea / POSITIONS:.0%} of the positions are at sea (nautical zone, no place "
         f"lookup); one-time load of the place data and tz tables: {load_s:.2f} s; "
         f"{POSITIONS:,} captures located in {seconds:.2f} s")  # fmt: skip


# ── 2. memory ──────────────────────────────────────────────────────────────────
PEAK_CODE = """
import sys
from bench._harness import peak_rss_kb, print_result
import numpy, tzfpy
from photo_pipeline.media import places
before = peak_rss_kb()
if sys.argv[1] == "gazetteer":
    places.place_at(35.6938, 139.7034)
else:
    import reverse_geocode
    reverse_geocode.get((35.6938, 139.7034))
    tzfpy.get_tz(139.7034, 35.6938)
print_result({"before": before, "after": peak_rss_kb()})
"""


def memory_section() -> None:
    h.heading("2. peak RSS added by the place data (fresh interpreter, numpy and tzfpy "
            "imported first), MB")  # fmt: skip
    rows = []
    kinds = ["gazetteer"] + (["reverse_geocode"] if reverse_geocode_installed() else [])
    for kind in kinds:
        done = h.run_json(["-c", PEAK_CODE, kind], kind, timeout=CHILD_TIMEOUT_S)
        before, after = done["before"] / 1024, done["after"] / 1024
        label = {"gazetteer": "media.place_index + tzfpy (now)",
                 "reverse_geocode": "reverse_geocode + tzfpy (before)"}[kind]  # fmt: skip
        rows.append([label, before, after, after - before])
    h.table(["place data", "VmHWM before", "VmHWM after", "added"], rows)  # fmt: skip
    if len(rows) == 1:
        h.note("reverse_geocode is not installed (pip install -e '.[places-data]'): no comparison")


# ── 3. scan cost (child side) ──────────────────────────────────────────────────
def child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("mode", choices=["with", "without"])
    args = parser.parse_args(argv)
    from photo_pipeline.pipeline.ingest import scan

    if args.mode == "without":
        scan.locate_reports = lambda reports: reports  # the scan as it was before zones
    from sqlalchemy import text

    from bench import _ingest_scan_child as scan_child

    with tempfile.TemporaryDirectory(prefix="pp_bench_places_") as home:
        lib = scan_child.open_library(f"sqlite:///{home}/library.sqlite3", "process")
        run = scan_child.run_scan(lib, Path(args.root))
        with lib.factory() as session:
            located = session.execute(
                text("SELECT count(*) FROM assets WHERE city IS NOT NULL")
            ).scalar_one()
        lib.factory.kw["bind"].dispose()
    cpu = run["cpu_self"] + run["cpu_children"]
    h.print_result({"wall": run["wall"], "cpu": cpu, "state": run["state"],
                    "total": run["total"], "cities": located})  # fmt: skip
    return 0


def measure_scan(root: Path, mode: str) -> dict[str, Any]:
    # -c, not as a script: the spawned pool must not re-import a __main__ module
    code = "import sys; from bench.places import child_main; sys.exit(child_main(sys.argv[1:]))"
    what = f"the {mode} scan process"
    return h.run_json(["-c", code, str(root), mode], what, timeout=CHILD_TIMEOUT_S)


def scan_section(root: Path, count: int, rounds: int) -> None:
    from bench import _ingest_photos

    photos = _ingest_photos.prepare_photos(root, count)
    n = len(photos.files)
    h.heading(f"3. first scan of {n:,} photos with and without zones and places "
            f"(process pool of {os.cpu_count()}, fresh SQLite library each, "
            f"{rounds} x A B B A)")  # fmt: skip

    def scanned(mode: str) -> dict[str, Any]:
        result = measure_scan(photos.root, mode)
        if result["state"] != "succeeded":
            raise SystemExit(f"a {mode} scan ended {result['state']}")
        return result

    modes = ("with", "without")
    runs = h.alternate({m: lambda m=m: scanned(m) for m in modes}, 2 * rounds, order="mirror")
    rows = []
    for mode, results in runs.items():
        walls, cpus = [r["wall"] for r in results], [r["cpu"] for r in results]
        rows.append([f"{mode} zones and places", n / statistics.median(walls),
                     statistics.median(walls), min(walls), max(walls),
                     statistics.median(cpus), results[0]["cities"]])  # fmt: skip
    h.table(["scan", "files/s", "wall s (median)", "min", "max", "CPU s (median)",
           "assets with a city"], rows)  # fmt: skip
    for measure in ("wall", "cpu"):
        with_ = statistics.median(r[measure] for r in runs["with"])
        without = statistics.median(r[measure] for r in runs["without"])
        added = h.figure(f"added {measure} time", with_ / without - 1)
        verdict = "ok" if added < TARGET else "OVER target"
        h.note(f"added by zones and places: {added:+.1%} of the scan's {measure} time "
             f"(target < {TARGET:.0%}): {verdict}")  # fmt: skip
    h.note("other work on the machine inflates wall times; CPU seconds are steadier")


def body(args: argparse.Namespace) -> None:
    lookup_section()
    memory_section()
    if not args.skip_scan:
        from bench import _ingest_photos

        count = 200 if args.quick else 2000
        root = args.photos or _ingest_photos.DEFAULT_ROOT / f"photos-{count}"
        scan_section(root, count, args.rounds)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="200 photos instead of 2,000")
    parser.add_argument("--photos", type=Path, help="where the photo set is (re)used")
    parser.add_argument("--skip-scan", action="store_true", help="lookups only")
    parser.add_argument("--rounds", type=int, default=2, help="A B B A rounds of scans")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
