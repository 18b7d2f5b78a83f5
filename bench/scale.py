"""Benchmark the library at 10k, 100k and 1M assets: listings, duplicates, jobs and
`similar`, on synthetic catalogue rows (never real files).

Run with ``.venv/bin/python -m bench.scale [--sizes 10000,100000,1000000]
[--databases sqlite,postgresql] [--repeat 5] [--similar-only] [--baseline SRC]``.
Per database it:

1. builds, for each size, a fresh library database (the app's migrations) and
   bulk-loads synthetic rows: ``N`` assets (20 cameras, 30 places, 70% with GPS,
   captures spread over ten years), one present file each plus a second for 3%
   (exact duplicates) and a missing one for 1%, ``N/10`` finished jobs of five
   types, and 64-bit pHashes: uniform random, except 5% of the assets planted in
   clusters of 2-5 around an original (each copy 0-12 bits from it, smaller than the
   original);
2. runs `similar`'s full regroup in a child process (wall and CPU time, peak RSS of
   that process), then again with nothing new (incremental), then after adding 100
   assets (10 planted copies of existing originals and 90 random). ``--baseline SRC``
   runs every one of these with the code under ``SRC`` too (an older checkout's
   ``src``, e.g. from ``git worktree add``), on the same catalogue: full regroups
   baseline, current, baseline, current (each one's best is shown); then the
   baseline's nothing-new and +100, then the current code's (after a full run of
   its own: the baseline does not keep the current code's chunks). The first full
   regroup of each size runs before step 3 lists its groups, the rest after it;
3. with every size built, times every API listing through the app (FastAPI
   TestClient, the real routes), then gives every asset its renditions (rows) and
   times a render with nothing to do (the stale assets looked up, and a whole render
   job run by a burst worker): the median of ``--repeat`` calls after one warm-up, the
   sizes called in turns, so that a load drifting over the minutes of the run does
   not drift their ratios;
4. scores the near-duplicate groups against the planted clusters: precision and
   recall over pairs of assets (a pair found is right when both lie in one planted
   cluster). At 10k and 100k it scores the old grouping too (connected components
   within 12 bits, chains included) on the same hashes.

``--similar-only`` runs steps 1, 2 and 4 (no jobs, no API calls): a million-asset
catalogue builds in about a minute per database.

It prints one table per database: each call's median per size and the ratio of the
largest size to the smallest (the target for paged calls: at most 1.5). PostgreSQL
tables are ANALYZEd after the load and after the first full regroup (autovacuum would
do it soon after); SQLite's are not (the app never runs ANALYZE). Reads share 2 cores
with the database server and other work: read the ratios.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench._scale_api import api_calls
from bench._scale_catalogue import analyze, build, database_url
from bench._scale_noop_render import noop_render
from bench._scale_rescan import rescan
from bench._scale_similar import run_similar, similar_child, similar_section


def one_database(
    kind: str,
    sizes: list[int],
    repeat: int,
    workdir: Path,
    *,
    similar_only: bool = False,
    baseline: str | None = None,
) -> dict[int, dict[str, object]]:
    """Every size built (and grouped by `similar`) first; then the API calls and the
    no-op render, the sizes in turns; then `similar`'s section, size by size."""
    results: dict[int, dict[str, object]] = {size: {} for size in sizes}
    urls: dict[int, str] = {}
    drops: list[Callable[[], None]] = []
    planted: dict[int, tuple[list[int], list[int]]] = {}
    try:
        for size in sizes:
            url, drop = database_url(kind, workdir, size)
            urls[size] = url
            if drop is not None:
                drops.append(drop)
            started = time.perf_counter()
            planted[size] = build(url, size, seed=size, jobs=not similar_only)
            results[size]["build s"] = time.perf_counter() - started
            if not similar_only:
                # Listed with the full regroup's groups, before anything is added, and
                # their statistics (autovacuum gathers them within a minute or so; until
                # then PostgreSQL hashes every group for a page of near groups).
                run_similar(url, full=True)
                analyze(url)
            print(f"{kind} {size}: built, load {os.getloadavg()[0]:.2f}", flush=True)
        if not similar_only:
            homes = {size: workdir / f"home-{kind}-{size}" for size in sizes}
            for size, times in api_calls(urls, homes, repeat).items():
                results[size].update(times)
            for size, times in noop_render(urls, homes, repeat).items():
                results[size].update(times)
            print(f"{kind}: calls timed, load {os.getloadavg()[0]:.2f}", flush=True)
        for size in sizes:
            hashes, cluster = planted.pop(size)
            results[size].update(similar_section(urls[size], size, hashes, cluster, baseline))
            print(f"{kind} {size}: done, load {os.getloadavg()[0]:.2f}", flush=True)
        return results
    finally:
        for drop in drops:
            drop()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rescan", type=int, default=0, help="files for a no-change rescan")
    parser.add_argument("--similar-only", action="store_true", help="no jobs, no API calls")
    parser.add_argument("--baseline", metavar="SRC", help="run `similar` with this code too")
    parser.add_argument("--similar-child", metavar="URL")
    parser.add_argument("--full", action="store_true")
    parser.add_argument("--incremental", action="store_true")
    args = parser.parse_args()
    if args.similar_child:
        similar_child(args.similar_child, args.full)
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    print(f"load average at start: {os.getloadavg()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-scale-") as tmp:
        for kind in args.databases.split(","):
            if args.rescan:
                found = rescan(kind, args.rescan, Path(tmp))
                print(f"{kind}: no-change rescan of {args.rescan:,} files: "
                      f"{found['rescan s']:.2f} s, {found['rescan files/s']:,.0f} files/s, "
                      f"load {os.getloadavg()[0]:.2f}", flush=True)  # fmt: skip
            if not sizes:
                continue
            results = one_database(
                kind,
                sizes,
                args.repeat,
                Path(tmp),
                similar_only=args.similar_only,
                baseline=args.baseline,
            )
            print_table(kind, sizes, results)
    print(f"load average at end: {os.getloadavg()}", flush=True)


def print_table(kind: str, sizes: list[int], results: dict[int, dict[str, object]]) -> None:
    names = list(results[sizes[0]])
    small, large = sizes[0], sizes[-1]
    print(f"\n{kind}: medians in ms unless named otherwise")
    print("| call | " + " | ".join(f"{s:,}" for s in sizes) + f" | {large:,}/{small:,} |")
    print("|---|" + "---:|" * (len(sizes) + 1))
    for name in names:
        values = [results[s].get(name) for s in sizes]
        cells = [
            "" if v is None else f"{v:.3f}" if isinstance(v, float) and v < 10 else f"{v:,.0f}"
            if isinstance(v, float) else str(v)
            for v in values
        ]  # fmt: skip
        first, last = values[0], values[-1]
        ratio = (
            f"{last / first:.2f}"
            if isinstance(first, float) and isinstance(last, float) and first > 0
            and name.startswith(("/api", "no-op render")) else ""
        )  # fmt: skip
        print(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
