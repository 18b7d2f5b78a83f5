"""Benchmark the writes that keep the asset summaries (the map's ``map_cells``, the
timeline's, the places'): the schema downgraded to ``--baseline`` (default 0025: the
map's row triggers, before 0028's statement triggers with transition tables on
PostgreSQL and the later summaries) against the head. ``--baseline 0030`` prices the
timeline's camera and place summaries (0032).

Run with ``.venv/bin/python -m bench.map_writes [--assets 100000] [--databases
postgresql,sqlite] [--writers 1,2,4] [--baseline 0025]``. Per database and schema, in a
fresh library database each:

1. a bulk load of ``--assets`` geotagged assets in one transaction (COPY on
   PostgreSQL, batches of ``executemany`` on SQLite: ``bench._scale_catalogue``);
2. writers in 1, 2 and 4 processes at once, each committing 6 transactions of 200
   geotagged assets into shared cells (a multi-row insert, a move of a quarter of
   them and a delete: ``tests.support.map_writers``): wall time and assets a second.

Both designs run in turns (old, new, old, new) and each figure is the better of two.
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from argparse import Namespace

from sqlalchemy import create_engine, func, select, text

from bench import _harness as h
from bench._databases import backends, fresh_database
from bench._scale_catalogue import ASSET_COLUMNS, asset_rows, bulk_load, planted_hashes

BATCHES, BATCH = 6, 200
HEAD = "head"


def prepared(url: str, design: str) -> None:
    from photo_pipeline.db import open_database
    from photo_pipeline.db.migrate import downgrade

    factory = open_database(url)
    engine = factory.kw["bind"]
    if design != HEAD:
        downgrade(engine, design.removeprefix("at "))
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO sources (id, path, added_at) VALUES (1, '/bench', 0)"))
    engine.dispose()


def bulk(kind: str, design: str, count: int) -> float:
    with fresh_database(kind, "bench_map_bulk") as url:
        prepared(url, design)
        hashes, cluster, original = planted_hashes(count, 1)
        rows = [
            r for r in asset_rows(count, hashes, original, cluster, seed=1) if r[14] is not None
        ]
        started = time.perf_counter()
        bulk_load(url, "assets", ASSET_COLUMNS, rows)
        seconds = time.perf_counter() - started
        engine = create_engine(url)
        with engine.connect() as conn:
            world = conn.scalar(text("SELECT count FROM map_cells WHERE level = 0"))
        engine.dispose()
        assert world == len(rows), (world, len(rows))
        return len(rows) / seconds


def writers(kind: str, design: str, processes: int) -> float:
    from tests.support.map_writers import commit_geotagged

    spawn = multiprocessing.get_context("spawn")
    with fresh_database(kind, "bench_map_writers") as url:
        prepared(url, design)
        barrier = spawn.Barrier(processes + 1)
        results = spawn.Queue()
        procs = [
            spawn.Process(
                target=commit_geotagged,
                args=(url, barrier, results, 1 + n * 1_000_000, BATCHES, BATCH),
            )
            for n in range(processes)
        ]
        for proc in procs:
            proc.start()
        barrier.wait(timeout=300)
        started = time.perf_counter()
        outcomes = [results.get(timeout=900) for _ in procs]
        seconds = time.perf_counter() - started
        for proc in procs:
            proc.join()
        errors = [d for status, d in outcomes if status == "error"]
        assert not errors, errors[0]
        engine = create_engine(url)
        with engine.connect() as conn:
            kept = conn.scalar(select(func.count()).select_from(text("assets")))
        engine.dispose()
        return kept / seconds


def body(args: Namespace) -> None:
    designs = [f"at {args.baseline}", HEAD]
    counts = [int(n) for n in args.writers.split(",")]
    for kind in backends(args.databases):
        results: dict[str, dict[str, float]] = {d: {} for d in designs}
        for _ in range(2):
            for design in designs:
                found = results[design]
                rate = bulk(kind, design, args.assets)
                found["bulk assets/s"] = max(found.get("bulk assets/s", 0.0), rate)
                for n in counts:
                    rate = writers(kind, design, n)
                    key = f"{n} writer(s) assets/s"
                    found[key] = max(found.get(key, 0.0), rate)
                print(f"{kind} {design}: {found}, load {os.getloadavg()[0]:.2f}", flush=True)
        h.heading(f"{kind}: geotagged assets written a second (higher is better)")
        names = list(results[designs[0]])
        rows = [
            [name, *(f"{results[d][name]:,.0f}" for d in designs),
             h.ratio(results[designs[1]][name], results[designs[0]][name])]
            for name in names
        ]  # fmt: skip
        h.table(["write", *designs, "new/old"], rows)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--assets", type=int, default=100_000)
    parser.add_argument("--databases", default="postgresql,sqlite")
    parser.add_argument("--writers", default="1,2,4")
    parser.add_argument("--baseline", default="0025", help="the revision compared with the head")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
