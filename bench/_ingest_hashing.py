"""The ingest benchmark's hashing (section 3): ``hash_file`` against a bare BLAKE3 loop
over the same files, sequential and in a spawned pool, in both orders."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from typing import Any

from bench import _photos
from bench._ingest_common import CPUS, HASH_TARGET, MB, Sizes, spawn_pool, start_pool, verdict
from bench._ingest_photos import PhotoSet
from bench._report import heading, note, ratio, table

HASHERS: dict[str, Callable[[str], str]] = {
    "bare read()": _photos.bare_blake3,
    "bare readinto()": _photos.bare_blake3_readinto,
    "hash_file": _photos.pipeline_hash,
}
BRIEF_BARE, BEST_BARE = "bare read()", "bare readinto()"


def sequential_pass(function: Callable[[str], str], paths: list[str]) -> tuple[float, list]:
    started = time.perf_counter()
    digests = [function(path) for path in paths]
    return time.perf_counter() - started, digests


def pool_pass(
    pool: ProcessPoolExecutor, size: int, function: Callable[[str], str], paths: list[str]
) -> tuple[float, list]:
    """One file per task with 2 × pool size tasks in flight, as JobContext.map does."""
    digests: list[str | None] = [None] * len(paths)
    in_flight: dict[Future[str], int] = {}
    started = time.perf_counter()
    for index, path in enumerate(paths):
        in_flight[pool.submit(function, path)] = index
        if len(in_flight) >= 2 * size:
            collect(in_flight, digests)
    while in_flight:
        collect(in_flight, digests)
    return time.perf_counter() - started, digests


def collect(in_flight: dict[Future[str], int], digests: list[str | None]) -> None:
    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
    for future in done:
        digests[in_flight.pop(future)] = future.result()


def both_orders(run: Callable[[Callable[[str], str]], tuple[float, list]], rounds: int) -> dict:
    """Passes of every hasher in list order, then in reverse, ``rounds`` times; returns
    the seconds per order and hasher, and whether all digests agreed."""
    names = list(HASHERS)
    orders = {f"{names[0]} first": names, f"{names[-1]} first": names[::-1]}
    seconds: dict[str, dict[str, list[float]]] = {order: {} for order in orders}
    digests: set[tuple[str, ...]] = set()
    for _ in range(rounds):
        for order, sequence in orders.items():
            for name in sequence:
                elapsed, found = run(HASHERS[name])
                seconds[order].setdefault(name, []).append(elapsed)
                digests.add(tuple(found))
    return {"seconds": seconds, "agree": len(digests) == 1}


def hashing_rows(mode: str, result: dict, total: float) -> tuple[list[list[Any]], dict]:
    rows, sums = [], Counter[str]()
    for order, by_name in result["seconds"].items():
        rate = {name: total / statistics.mean(times) for name, times in by_name.items()}
        sums.update({name: statistics.mean(times) for name, times in by_name.items()})
        rows.append([
            mode, order, *(rate[name] for name in HASHERS),
            ratio(rate["hash_file"], rate[BRIEF_BARE]), ratio(rate["hash_file"], rate[BEST_BARE]),
            "ok" if result["agree"] else "DIFFER",
        ])  # fmt: skip
    ratios = {bare: sums[bare] / sums["hash_file"] for bare in (BRIEF_BARE, BEST_BARE)}
    return rows, ratios


def hashing_section(photos: PhotoSet, sizes: Sizes, probed: dict) -> dict[str, dict]:
    paths = photos.paths()
    total = photos.total_bytes / MB
    heading(f"3. hashing throughput: hash_file vs a bare BLAKE3 loop over the {len(paths):,} "
            f"photos ({total:,.0f} MB)")  # fmt: skip
    note("bare read() = blake3.blake3() fed by open(...).read(1 MiB) (a new bytes object per "
         "chunk); bare readinto() = the same into one reused 1 MiB buffer; hash_file = the "
         "scan's (open_original + readinto a reused buffer). Every hasher in both orders; "
         "photos in the page cache, so this is CPU-bound hashing")  # fmt: skip
    sequential = both_orders(lambda f: sequential_pass(f, paths), sizes.hash_rounds)
    with spawn_pool(CPUS) as pool:
        start_s = start_pool(pool, CPUS)
        pooled = both_orders(lambda f: pool_pass(pool, CPUS, f, paths), sizes.hash_rounds)
    rows, ratios = [], {}
    for mode, result in (("sequential", sequential), (f"pool of {CPUS}", pooled)):
        mode_rows, ratios[mode] = hashing_rows(mode, result, total)
        rows += mode_rows
    probe = probed["probe_first"]
    in_scan = probe["hash_bytes"] / MB / probe["hash"]
    in_scan_cpu = probe["hash_bytes"] / MB / probe["hash_cpu"]
    rows.append(["in the probed first scan", "per process, wall", "", "", in_scan, "", "", ""])
    rows.append(["in the probed first scan", "per CPU-second", "", "", in_scan_cpu, "", "", ""])
    table(["mode", "order", *(f"{name} MB/s" for name in HASHERS), "hash_file/read()",
           "hash_file/readinto()", "digests"], rows)  # fmt: skip
    note(f"pool start (spawn {CPUS} processes + imports): {start_s:.2f} s, outside the "
         "timings. In the scan, hashing shares the cores with metadata decoding and the "
         "worker's database writes (and, here, other users' processes): compare its CPU "
         "rate, not its wall rate")  # fmt: skip
    for mode, by_bare in ratios.items():
        for bare, value in by_bare.items():
            note(f"{mode}: hash_file / {bare} = {value:.2f} (mean of both orders) — target "
                 f"≥ {HASH_TARGET}: {verdict(value, HASH_TARGET, at_least=True)}")  # fmt: skip
    return ratios
