"""The ingest benchmark's hashing (section 3): ``hash_file`` against a bare BLAKE3 loop
over the same files, sequential and in a spawned pool, in both orders. The spawned pool
imports the hashers from here by name."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from typing import Any

import blake3

from bench import _harness as h
from bench._ingest_common import CPUS, HASH_TARGET, MB, Sizes, verdict
from bench._ingest_photos import PhotoSet
from photo_pipeline.media import hash_file

READ_CHUNK = 1 << 20  # 1 MiB reads (hash_file reads 64 KiB into a reused buffer)


def bare_blake3(path: str) -> str:
    """BLAKE3 of a file with nothing around it: plain open() and read() by 1 MiB."""
    hasher = blake3.blake3()
    with open(path, "rb") as fp:
        while chunk := fp.read(READ_CHUNK):
            hasher.update(chunk)
    return hasher.hexdigest()


def bare_blake3_readinto(path: str) -> str:
    """The same, reading into one reused 1 MiB buffer (no new bytes object per chunk)."""
    hasher = blake3.blake3()
    buffer = bytearray(READ_CHUNK)
    view = memoryview(buffer)
    with open(path, "rb") as fp:
        while n := fp.readinto(buffer):
            hasher.update(view[:n])
    return hasher.hexdigest()


def pipeline_hash(path: str) -> str:
    """The scan's hashing, as ``inspect_file`` calls it."""
    return hash_file(Path(path))


HASHERS: dict[str, Callable[[str], str]] = {
    "bare read()": bare_blake3,
    "bare readinto()": bare_blake3_readinto,
    "hash_file": pipeline_hash,
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
    done = h.alternate({n: lambda n=n: run(HASHERS[n]) for n in names}, 2 * rounds, order="mirror")
    orders = {f"{names[0]} first": slice(0, None, 2), f"{names[-1]} first": slice(1, None, 2)}
    seconds = {order: {name: [t for t, _ in done[name][part]] for name in names}
               for order, part in orders.items()}  # fmt: skip
    digests = {tuple(found) for results in done.values() for _, found in results}
    return {"seconds": seconds, "agree": len(digests) == 1}


def hashing_rows(mode: str, result: dict, total: float) -> tuple[list[list[Any]], dict]:
    rows, sums = [], Counter[str]()
    for order, by_name in result["seconds"].items():
        rate = {name: total / statistics.mean(times) for name, times in by_name.items()}
        sums.update({name: statistics.mean(times) for name, times in by_name.items()})
        rows.append([
            mode, order, *(rate[name] for name in HASHERS),
            *(h.ratio(rate["hash_file"], rate[bare]) for bare in (BRIEF_BARE, BEST_BARE)),
            "ok" if result["agree"] else "DIFFER",
        ])  # fmt: skip
    ratios = {bare: sums[bare] / sums["hash_file"] for bare in (BRIEF_BARE, BEST_BARE)}
    return rows, ratios


def hashing_section(photos: PhotoSet, sizes: Sizes, probed: dict) -> dict[str, dict]:
    paths = photos.paths()
    total = photos.total_bytes / MB
    h.heading(f"3. hashing throughput: hash_file vs a bare BLAKE3 loop over the {len(paths):,} "
            f"photos ({total:,.0f} MB)")  # fmt: skip
    h.note("bare read() = blake3.blake3() fed by open(...).read(1 MiB) (a new bytes object per "
         "chunk); bare readinto() = the same into one reused 1 MiB buffer; hash_file = the "
         "scan's (open_original + readinto a reused buffer). Every hasher in both orders; "
         "photos in the page cache, so this is CPU-bound hashing")  # fmt: skip
    sequential = both_orders(lambda f: sequential_pass(f, paths), sizes.hash_rounds)
    with h.spawn_pool(CPUS) as pool:
        start_s = h.start_pool(pool, CPUS)
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
    h.table(["mode", "order", *(f"{name} MB/s" for name in HASHERS), "hash_file/read()",
           "hash_file/readinto()", "digests"], rows)  # fmt: skip
    h.note(f"pool start (spawn {CPUS} processes + imports): {start_s:.2f} s, outside the "
         "timings. In the scan, hashing shares the cores with metadata decoding and the "
         "worker's database writes (and, here, other users' processes): compare its CPU "
         "rate, not its wall rate")  # fmt: skip
    for mode, by_bare in ratios.items():
        for bare, value in by_bare.items():
            h.figure(f"{mode}: hash_file / {bare}", value)
            h.note(f"{mode}: hash_file / {bare} = {value:.2f} (mean of both orders) — target "
                 f"≥ {HASH_TARGET}: {verdict(value, HASH_TARGET, at_least=True)}")  # fmt: skip
    return ratios
