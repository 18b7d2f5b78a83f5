"""The worker benchmark's image job (section 2): a CPU-bound job on process and thread
pools, in the runtime against bare pools, cold and warm."""

from __future__ import annotations

import os
import statistics
import tempfile
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import repeat
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench import _image_job as work
from bench._databases import fresh_database, opened
from bench._worker_common import (
    POOL,
    Database,
    Sizes,
    check_job,
    job_window,
    run_worker,
    seconds_list,
    worker_config,
)

SHARE_TARGET = 0.05
WARM_UP_SLEEP_S = 1.0  # > the gap between a fresh pool's first and last process start


# ── 2. image job ───────────────────────────────────────────────────────────────
def machine_parallelism(rounds: int = 3) -> float:
    """How much faster 2 processes do 2 units of pure-Python work than 1 process does
    (2.00 = two whole cores)."""
    unit = 3_000_000
    factors = []
    with h.spawn_pool(POOL) as pool:
        h.start_pool(pool, POOL, 0.02)
        for _ in range(rounds):
            started = time.perf_counter()
            for _ in range(POOL):
                work.spin(unit)
            alone = time.perf_counter() - started
            started = time.perf_counter()
            list(pool.map(work.spin, [unit] * POOL))
            factors.append(alone / (time.perf_counter() - started))
    return statistics.median(factors)


def pool_start_stop() -> tuple[float, float]:
    """Seconds until a fresh spawned pool has run a task in each of its processes, and
    seconds to shut it down."""
    started = time.perf_counter()
    pool = h.spawn_pool(POOL)
    h.start_pool(pool, POOL, 0.02)
    ready = time.perf_counter()
    pool.shutdown(wait=True)
    return ready - started, time.perf_counter() - ready


def make_photos(directory: Path, count: int, size: tuple[int, int]) -> list[str]:
    paths = [str(directory / f"IMG_{i:04d}.jpg") for i in range(count)]
    with h.spawn_pool(POOL) as pool:
        list(pool.map(work.make_photo, paths, range(count), repeat(size)))
    return paths


CaseKey = tuple[str | None, str, bool]  # backend (None: bare), pool kind, warm


@dataclass(frozen=True)
class ImageCase:
    label: str
    kind: str  # sequential, thread or process
    backend: str | None = None  # None: the bare loop
    warm: bool = False  # process pool started (and used) before the timed work

    @property
    def key(self) -> CaseKey:
        return self.backend, self.kind, self.warm

    @property
    def bare_twin(self) -> CaseKey:
        return None, self.kind, self.warm


@dataclass(frozen=True)
class Measurement:
    wall: float
    cpu: float | None  # CPU seconds of this process and its reaped children (pools)
    own: float | None = None  # CPU seconds of the thread running Worker.run()


def live_children_cpu() -> float:
    """CPU time of this process's running children (a warm pool), from Linux /proc."""
    ticks, me = 0, os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended meanwhile
        if int(fields[1]) == me:  # fields: state, ppid, … utime (11), stime (12)
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


def image_cases(backends: list[str]) -> list[ImageCase]:
    """Grouped by pool kind, each Worker case next to its bare twin."""
    groups = [
        ("thread", False, f"thread pool ({POOL})", "thread executor"),
        ("process", False, f"process pool ({POOL}), fresh", "process executor, fresh"),
        ("process", True, f"process pool ({POOL}), warm", "process executor, warm"),
    ]
    cases = [ImageCase("bare, sequential", "sequential")]
    for kind, warm, bare_label, worker_label in groups:
        cases.append(ImageCase(f"bare, {bare_label}", kind, warm=warm))
        cases += [ImageCase(f"Worker, {b}, {worker_label}", kind, b, warm) for b in backends]
    return cases


def bare_images(case: ImageCase, paths: list[str], out_dir: str) -> Measurement:
    """The thumbnail loop with no coordinator. A fresh pool's start and shutdown are
    inside the time, as they are inside Worker.run(); a warm pool has made a thumbnail
    in each process before, and its shutdown is not timed."""
    if case.warm:
        with h.spawn_pool(POOL) as pool, warm_up_params(paths) as (keys, params):
            pids = set(pool.map(work.warm_item, repeat(params), keys))
            if len(pids) != POOL:
                raise RuntimeError(f"warm-up reached {len(pids)} of {POOL} processes")
            started, cpu = time.perf_counter(), h.cpu_seconds() + live_children_cpu()
            list(pool.map(work.make_thumbnail, paths, repeat(out_dir)))
            cpu = h.cpu_seconds() + live_children_cpu() - cpu
            return Measurement(time.perf_counter() - started, cpu)
    started, cpu = time.perf_counter(), h.cpu_seconds()
    if case.kind == "sequential":
        for path in paths:
            work.make_thumbnail(path, out_dir)
    else:
        pool = ThreadPoolExecutor(POOL) if case.kind == "thread" else h.spawn_pool(POOL)
        with pool:
            list(pool.map(work.make_thumbnail, paths, repeat(out_dir)))
    return Measurement(time.perf_counter() - started, h.cpu_seconds() - cpu)


@contextmanager
def warm_up_params(paths: list[str]) -> Iterator[tuple[list[str], dict[str, Any]]]:
    """Items and params of a warm-up: two items per pool process, each waiting long
    enough for every freshly spawned process to start and take one."""
    with tempfile.TemporaryDirectory(prefix="pp_bench_warm_") as out:
        yield paths[: 2 * POOL], {"out_dir": out, "sleep": WARM_UP_SLEEP_S}


def runtime_images(case: ImageCase, db: Database, paths: list[str], out_dir: str) -> Measurement:
    """One job of the photos through an in-process burst Worker: the wall time of
    run(); or, warm, the job's claim-to-finish time when a small job with a higher
    priority ran first in the same run() (as in a long-running worker)."""
    factory, service = db
    with warm_up_params(paths) as (keys, params):
        if case.warm:
            service.enqueue(work.WARMUP_JOB, items=keys, params=params, priority=1)
        job = service.enqueue(work.THUMBNAIL_JOB, items=paths, params={"out_dir": out_dir})
        work.WARM_PIDS.clear()
        cpu, own = h.cpu_seconds(), time.thread_time()
        wall = run_worker(factory, service, worker_config(POOL, case.kind))
        cpu, own = h.cpu_seconds() - cpu, time.thread_time() - own
    check = check_job(service, job["id"], len(paths))
    if check != "ok":
        raise RuntimeError(check)
    if not case.warm:
        return Measurement(wall, cpu, own)
    if len(work.WARM_PIDS) != POOL:
        raise RuntimeError(f"warm-up reached {len(work.WARM_PIDS)} of {POOL} processes")
    return Measurement(job_window(factory, [job["id"]])[0], None)


@contextmanager
def output_dir(expected: int) -> Iterator[str]:
    """A fresh directory for thumbnails; checks that each photo got one."""
    with tempfile.TemporaryDirectory(prefix="pp_bench_thumbs_") as out:
        yield out
        made = len(list(Path(out).glob("*.webp")))
        if made != expected:
            raise RuntimeError(f"{made} thumbnails for {expected} photos")


@contextmanager
def open_databases(backends: list[str]) -> Iterator[dict[str, Database]]:
    """One fresh database per backend, open for the whole image section."""
    with ExitStack() as stack:
        yield {
            backend: stack.enter_context(opened(stack.enter_context(fresh_database(backend))))
            for backend in backends
        }


Results = dict[CaseKey, list[Measurement]]


def image_rounds(
    cases: list[ImageCase], paths: list[str], dbs: dict[str, Database], rounds: int
) -> Results:
    """Every case once per round, in order, then in reverse order (A B C, C B A, …), so
    that a slow drift of the machine's load hits twins alike."""

    def measure(case: ImageCase) -> Measurement:
        with output_dir(len(paths)) as out:
            if case.backend is None:
                return bare_images(case, paths, out)
            return runtime_images(case, dbs[case.backend], paths, out)

    return h.alternate({c.key: lambda c=c: measure(c) for c in cases}, rounds, order="mirror")


def image_section(backends: list[str], sizes: Sizes) -> None:
    n, (width, height) = sizes.photos, sizes.photo_size
    h.heading(
        f"2. image job: {n} JPEGs of {width}×{height} (quality 90) → draft → thumbnail "
        f"256×256 → exif_transpose → WebP, pools of {POOL}"
    )
    with open_databases(backends) as dbs, tempfile.TemporaryDirectory(prefix="pp_bench_") as tmp:
        started = time.perf_counter()
        paths = make_photos(Path(tmp), n, sizes.photo_size)
        megabytes = sum(Path(p).stat().st_size for p in paths) / 1e6
        h.note(
            f"photos generated in {time.perf_counter() - started:.1f} s ({megabytes:.0f} MB, "
            f"{megabytes / n:.1f} MB each, EXIF orientations 1/6/8/3), read from the page cache"
        )
        with output_dir(min(n, 10)) as out:  # warm-up, untimed
            bare_images(ImageCase("warm-up", "sequential"), paths[:10], out)
        start_stop = [pool_start_stop() for _ in range(sizes.image_rounds)]
        cases = image_cases(backends)
        results = image_rounds(cases, paths, dbs, sizes.image_rounds)
    image_table(cases, results, n)
    image_findings(cases, results, backends, start_stop)


def paired(results: Results, a: CaseKey, b: CaseKey, what: str = "wall") -> float | None:
    """Median over rounds of a/b (wall or CPU seconds): each round's pair was measured
    close together, so the machine's noise partly cancels."""
    pairs = [
        (getattr(x, what), getattr(y, what)) for x, y in zip(results[a], results[b], strict=True)
    ]
    if any(x is None or y is None for x, y in pairs):
        return None
    return h.median_ratio(pairs)


def per_photo(measured: list[Measurement], what: str, n: int) -> float | str:
    """Median milliseconds per photo of a CPU figure; blank when not measured."""
    values = [getattr(m, what) for m in measured]
    return "" if None in values else statistics.median(values) / n * 1000


def share_text(factor: float | None) -> str:
    return "" if factor is None else f"{factor:.3f}x = {(1 - 1 / factor) * 100:+.1f}%"


def image_table(cases: list[ImageCase], results: Results, n: int) -> None:
    sequential = (None, "sequential", False)
    rows = []
    for case in cases:
        walls = [m.wall for m in results[case.key]]
        wall = statistics.median(walls)
        twin = case.bare_twin if case.backend is not None else None
        rows.append([
            case.label, wall, seconds_list(walls), wall / n * 1000,
            f"{paired(results, sequential, case.key):.2f}x",
            per_photo(results[case.key], "cpu", n), per_photo(results[case.key], "own", n),
            share_text(twin and paired(results, case.key, twin)),
            share_text(twin and paired(results, case.key, twin, "cpu")),
        ])  # fmt: skip
    h.table(
        ["run", "median wall s", "each round s", "wall ms/photo", "speed vs sequential",
         "CPU ms/photo", "run() thread CPU ms/photo", "wall runtime/bare = share",
         "CPU runtime/bare = share"],
        rows,
    )  # fmt: skip
    h.note(
        "fresh: the time includes starting the spawned pool and shutting it down (Worker.run() "
        "makes its pool per run: a `--burst` worker or `job wait` pays it each time); warm: "
        "each process of the pool has made a thumbnail before (a long-running worker; for "
        "the Worker: the job's claim → finish time in the jobs table, after a small warm-up "
        "job in the same run()); CPU: of this process and its pool processes (not of the "
        "PostgreSQL server; not measured for the Worker with a warm pool); run() thread "
        "CPU: the coordinator's own work (claim, item pages, result batches, finish; with the "
        "process executor also submitting items and taking results), start and stop included"
    )
    h.note(
        "runtime/bare: against the bare loop of the same pool kind and state, as the median "
        "of per-round ratios; share = the coordination's share of the runtime's time "
        f"(1 - bare/runtime), target under {SHARE_TARGET:.0%}"
    )


def image_findings(
    cases: list[ImageCase],
    results: Results,
    backends: list[str],
    start_stop: list[tuple[float, float]],
) -> None:
    for what in ("wall", "cpu"):
        shares = {}
        for case in cases:
            factor = paired(results, case.key, case.bare_twin, what) if case.backend else None
            if factor is not None:
                shares[case.label] = 1 - 1 / factor
        worst = max(shares, key=shares.__getitem__)
        verdict = "all under" if shares[worst] < SHARE_TARGET else "NOT all under"
        h.figure(f"highest coordination share of {what} time", shares[worst])
        h.note(
            f"coordination share of {what} time: {min(shares.values()):+.1%} … "
            f"{shares[worst]:+.1%} ({verdict} {SHARE_TARGET:.0%}; the highest: {worst})"
        )
    work_cpu = statistics.median(m.cpu for m in results[None, "sequential", False])
    own_shares = [
        statistics.median(m.own for m in results[case.key]) / work_cpu
        for case in cases
        if case.backend is not None and not case.warm
    ]
    h.note(
        "coordinator's own CPU (the run() thread) against the CPU of the photos' work (bare "
        f"sequential loop): {min(own_shares):.1%} … {max(own_shares):.1%} (the PostgreSQL "
        "server's CPU not included)"
    )
    start = statistics.median(s for s, _ in start_stop)
    stop = statistics.median(s for _, s in start_stop)
    h.note(
        f"a fresh spawned pool of {POOL} processes takes {start:.2f} s until each has run a "
        f"task (spawn + imports) and {stop:.2f} s to shut down (median of {len(start_stop)})"
    )
    h.note("process vs thread (wall time of process / thread; below 1: process is faster):")
    for backend in [None, *backends]:
        thread = (backend, "thread", False)
        fresh = paired(results, (backend, "process", False), thread)
        warm = paired(results, (backend, "process", True), thread)
        cpu_fresh = paired(results, (backend, "process", False), thread, "cpu")
        cpu_warm = paired(results, (backend, "process", True), thread, "cpu")
        label = "bare loop" if backend is None else f"Worker on {backend}"
        cpu = f"CPU seconds: fresh pool {cpu_fresh:.2f}x"
        if cpu_warm is not None:
            cpu += f", warm pool {cpu_warm:.2f}x"
        h.note(
            f"{label}: fresh pool {fresh:.2f}x ({faster(fresh)}), warm pool {warm:.2f}x "
            f"({faster(warm)}); {cpu}",
            indent=4,
        )


def faster(factor: float) -> str:
    """Words for a process/thread wall-time ratio."""
    if factor > 1:
        return f"thread {(factor - 1) * 100:.0f}% faster"
    return f"process {(1 / factor - 1) * 100:.0f}% faster"
