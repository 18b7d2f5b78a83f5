"""Benchmark what XMP sidecars add: a scan of new photos with the read-back of their
curation (one exiftool request per photo, for its own rating and keywords) against the
same scan without it, and ``xmp_write`` per sidecar.

Run with ``.venv/bin/python -m bench.xmp [--photos N] [--width PX]``. It prints photos per second of
each scan and their ratio, and sidecars written per second. Rounds alternate the two
scans (each on a fresh SQLite library) and the best round of each counts (the machine
is shared).
"""

from __future__ import annotations

import argparse
import logging
import tempfile
import time
from pathlib import Path

from tests.factories import photos
from tests.support.photo_jobs import scan_folders

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline import curation, xmp
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library.catalog import Catalog


def _scan(folder: Path, database: Path, read_back: bool) -> float:
    factory = open_database(f"sqlite:///{database}")
    original = scan._read_back_curation
    if not read_back:
        scan._read_back_curation = lambda ctx, contents: None  # type: ignore[assignment]
    try:
        started = time.perf_counter()
        scan_folders(factory, folder)
        return time.perf_counter() - started
    finally:
        scan._read_back_curation = original


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--photos", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--width", type=int, default=64, help="of the photos (3:4)")
    args = parser.parse_args()
    logging.disable(logging.WARNING)
    work = Path(tempfile.mkdtemp(prefix="pp_bench_xmp_"))
    folder = work / "photos"
    for n in range(args.photos):
        photos.jpeg(folder / f"IMG_{n:04d}.jpg", size=(args.width, args.width * 3 // 4), seed=n)
    best = {True: float("inf"), False: float("inf")}
    for round_ in range(args.rounds):
        for read_back in (False, True):
            database = work / f"library-{round_}-{read_back}.sqlite3"
            best[read_back] = min(best[read_back], _scan(folder, database, read_back))
    without, with_ = args.photos / best[False], args.photos / best[True]
    print(f"scan without read-back: {without:7.1f} photos/s")
    print(f"scan with read-back:    {with_:7.1f} photos/s  (ratio {with_ / without:.2f})")

    factory = open_database(f"sqlite:///{work / f'library-0-{True}.sqlite3'}")
    ids = [f["asset_id"] for f in Catalog(factory).files() if f["asset_id"]]
    curation.set_rating(factory, ids, 4)
    service = JobService(factory)
    queued = xmp.request_write(service)
    assert queued is not None
    from tests.support.photo_jobs import run_worker

    started = time.perf_counter()
    run_worker(factory, xmp.JOB_TYPE)
    elapsed = time.perf_counter() - started
    print(f"xmp_write:              {len(ids) / elapsed:7.1f} sidecars/s (new sidecars)")


if __name__ == "__main__":
    main()
