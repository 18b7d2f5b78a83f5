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
   original). The assets are loaded with their summary triggers off, then the map
   cells, timeline days, places and search documents are rebuilt by the app's own
   rebuilds (``bench._scale_catalogue.rebuild_summaries``);
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

``--shape skewed`` loads a real library's shape instead of uniform rows (cameras by
era, one new phone in the last year, a camera of 1% of one year, a 0.3% trip to
Iceland, 1% Live Photos and Motion Photos, 0.5% exact duplicates:
``bench._scale_catalogue.ERAS`` and on), what the ``/api/assets filter`` calls page
through. ``--keep DIR`` keeps each size's database (a SQLite file in DIR, a PostgreSQL
schema ``bench_keep_<shape>_<size>``) built once, its near groups regrouped, and
reuses it in later runs: ``--keep /tmp/k --shape skewed --calls "/api/assets filter"``
times the filters again (on the code of the run: a later migration is applied when the
library opens) without the minutes of a million-row load. Remove them by hand.

``--similar-only`` runs steps 1, 2 and 4 (no jobs, no API calls): a million-asset
catalogue builds in about a minute per database. ``--calls /api/search,/api/map`` runs
steps 1 and 3 for the API calls whose names start so (no `similar`, no render).

It prints one table per database: each call's median per size and the ratio of the
largest size to the smallest (the target for paged calls: at most 1.5). PostgreSQL
tables are ANALYZEd after the load and after the first full regroup (autovacuum would
do it soon after); SQLite's are not (the app never runs ANALYZE). Reads share 2 cores
with the database server and other work: read the ratios.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from argparse import Namespace
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench._databases import fresh_database
from bench._scale_calls import api_calls, noop_render
from bench._scale_catalogue import SHAPES, analyze, build
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
    calls: tuple[str, ...] = (),
    shape: str = "uniform",
    keep: Path | None = None,
) -> dict[int, dict[str, object]]:
    """Every size built (and grouped by `similar`) first; then the API calls and the
    no-op render, the sizes in turns; then `similar`'s section, size by size."""
    results: dict[int, dict[str, object]] = {size: {} for size in sizes}
    planted: dict[int, tuple[list[int], list[int]]] = {}
    with ExitStack() as databases:
        if keep is not None:
            kept = {s: databases.enter_context(kept_database(kind, keep, shape, s)) for s in sizes}
            urls = {s: url for s, (url, _) in kept.items()}
        else:
            urls = {
                s: databases.enter_context(fresh_database(kind, f"bench_scale_{s}")) for s in sizes
            }
        for size, url in urls.items():
            if keep is not None and kept[size][1]():
                print(f"{kind} {size}: kept, load {os.getloadavg()[0]:.2f}", flush=True)
                continue
            started = time.perf_counter()
            planted[size] = build(url, size, seed=size, jobs=not similar_only, shape=shape)
            results[size]["build s"] = time.perf_counter() - started
            if keep is not None:
                run_similar(url, full=True)
                analyze(url)
                kept[size][1](True)
            elif calls:
                analyze(url)
            elif not similar_only:
                # Listed with the full regroup's groups, before anything is added, and
                # their statistics (autovacuum gathers them within a minute or so; until
                # then PostgreSQL hashes every group for a page of near groups).
                run_similar(url, full=True)
                analyze(url)
            print(f"{kind} {size}: built, load {os.getloadavg()[0]:.2f}", flush=True)
        if not similar_only:
            homes = {size: workdir / f"home-{kind}-{size}" for size in sizes}
            for size, times in api_calls(urls, homes, repeat, calls).items():
                results[size].update(times)
            if calls:
                return results
            for size, times in noop_render(urls, homes, repeat).items():
                results[size].update(times)
            print(f"{kind}: calls timed, load {os.getloadavg()[0]:.2f}", flush=True)
        for size in sizes:
            if size not in planted:  # kept from an earlier run: its planted clusters unknown
                continue
            hashes, cluster = planted.pop(size)
            results[size].update(similar_section(urls[size], size, hashes, cluster, baseline))
            print(f"{kind} {size}: done, load {os.getloadavg()[0]:.2f}", flush=True)
    return results


@contextmanager
def kept_database(kind: str, keep: Path, shape: str, size: int):
    """The URL of a database kept in ``keep`` between runs, and a callable saying
    whether it is built (given True: marking it built)."""
    name = f"bench_keep_{shape}_{size}"
    keep.mkdir(parents=True, exist_ok=True)
    marker = keep / f"{kind}-{name}.built"
    if kind == "sqlite":
        url = f"sqlite:///{keep / name}.sqlite3"
        if not marker.exists():
            (keep / f"{name}.sqlite3").unlink(missing_ok=True)
    else:
        from sqlalchemy import create_engine, text
        from sqlalchemy.engine import make_url
        from tests.support.databases import PG_URL

        admin = create_engine(PG_URL)
        with admin.begin() as conn:
            if not marker.exists():
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{name}" CASCADE'))
            conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{name}"'))
        admin.dispose()
        scoped = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={name}"})
        url = scoped.render_as_string(hide_password=False)

    def built(mark: bool = False) -> bool:
        if mark:
            marker.touch()
        return marker.exists()

    yield url, built


def body(args: Namespace) -> None:
    sizes = [int(s) for s in args.sizes.split(",") if s]
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
                calls=tuple(c for c in args.calls.split(",") if c),
                shape=args.shape,
                keep=Path(args.keep) if args.keep else None,
            )
            print_table(kind, sizes, results)


def print_table(kind: str, sizes: list[int], results: dict[int, dict[str, object]]) -> None:
    """Each call's median per size and, for the paged calls, largest / smallest size."""
    small, large = sizes[0], sizes[-1]
    h.heading(f"{kind}: medians in ms unless named otherwise")
    h.figure("by size", results)
    rows = []
    for name in results[small]:
        values = [results[s].get(name) for s in sizes]
        first, last = values[0], values[-1]
        paged = name.startswith(("/api", "no-op render"))
        ratio = ""
        if paged and isinstance(first, float) and isinstance(last, float) and first > 0:
            ratio = h.ratio(last, first, name=name)
        rows.append([name, *(shown(v) for v in values), ratio])
    h.table(["call", *(f"{s:,}" for s in sizes), f"{large:,}/{small:,}"], rows)


def shown(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if value < 10 else f"{value:,.0f}"
    return "" if value is None else str(value)


def child(args: list[str]) -> dict[str, Any]:
    url, mode = args
    return similar_child(url, full=mode == "full")


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--databases", default="sqlite,postgresql")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--rescan", type=int, default=0, help="files for a no-change rescan")
    parser.add_argument("--similar-only", action="store_true", help="no jobs, no API calls")
    parser.add_argument("--baseline", metavar="SRC", help="run `similar` with this code too")
    parser.add_argument("--calls", default="", help="only the API calls starting so (a,b)")
    parser.add_argument("--shape", choices=SHAPES, default="uniform", help="the rows' shape")
    parser.add_argument("--keep", metavar="DIR", help="keep the databases here, reuse them")
    return h.run(parser, body, argv, child=child)


if __name__ == "__main__":
    sys.exit(main())
