"""Benchmark the worker runtime (Worker, JobContext) against the bare work it runs.

Run with ``.venv/bin/python bench/worker.py [--quick]``. It prints:

1. the coordination cost per item: one job of no-op items run by an in-process
   ``Worker(...).run()`` in burst mode, concurrency 1 and 2 (thread executor), on SQLite
   and PostgreSQL (with and without planner statistics that know the job); then the
   same items split over 1 and 2 ``photo-pipeline worker --burst`` processes;
2. an image job (JPEG → draft → 256 px thumbnail → EXIF orientation → WebP): the bare
   loop (sequential, 2 threads, 2 spawned processes, fresh or warm) vs the same work
   through the runtime with the thread and the process executor, the coordination
   share of the wall time, and which executor is faster.

Databases are fresh (a SQLite file, a PostgreSQL schema from
``PHOTO_PIPELINE_TEST_DATABASE_URL``) and removed afterwards, like the photos. Timings
on this small shared machine are noisy: read the ratios, measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from concurrent.futures import (
    FIRST_COMPLETED,
    ProcessPoolExecutor,
    ThreadPoolExecutor,
    wait,
)
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from itertools import repeat
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import PIL
import sqlalchemy
from sqlalchemy import func, select, text, update
from sqlalchemy.engine import make_url

from photo_pipeline.db.schema import job_events, job_items, jobs
from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import _image_job as work  # noqa: E402
from coordinator import (  # noqa: E402
    PG_URL,
    fresh_database,
    heading,
    note,
    opened,
    postgres_error,
    postgres_version,
    ratio,
    table,
)

Database = tuple[Any, JobService]  # session factory, service

GATE_JOB = "bench.gate"
OTHER_JOB = "bench.other"  # served by no worker here
POOL = 2  # workers of every pool: this machine has 2 cores
SHARE_TARGET = 0.05
WARM_UP_SLEEP_S = 1.0  # > the gap between a fresh pool's first and last process start
PROCESS_TIMEOUT_S = 600


@dataclass(frozen=True)
class Sizes:
    noop_items: int  # items of the no-op job
    noop_rounds: int  # in-process no-op runs per configuration
    photos: int
    photo_size: tuple[int, int]
    image_rounds: int  # interleaved rounds of every image configuration


FULL = Sizes(noop_items=20_000, noop_rounds=2, photos=120, photo_size=(3000, 2000), image_rounds=3)
QUICK = Sizes(noop_items=2_000, noop_rounds=1, photos=40, photo_size=(3000, 2000), image_rounds=1)


# ── helpers ────────────────────────────────────────────────────────────────────
def worker_config(concurrency: int, executor: str = "thread") -> WorkerConfig:
    return WorkerConfig(concurrency=concurrency, executor=executor, burst=True, poll_seconds=0.05)


def run_worker(factory: Any, service: JobService, config: WorkerConfig) -> float:
    """Run an in-process burst worker until no work is left; returns its wall time."""
    worker = Worker(service, WorkerRegistry(factory), work.handlers, config)
    started = time.perf_counter()
    worker.run()
    return time.perf_counter() - started


def check_job(service: JobService, job_id: str, items: int) -> str:
    state = service.get(job_id)["state"]
    by_state = service.progress(job_id)["by_state"]
    ok = state == "succeeded" and by_state == {"succeeded": items}
    return "ok" if ok else f"FAILED: job {state}, items {by_state}"


def median_ratio(pairs: list[tuple[float, float]]) -> float:
    """The median of a/b over rounds: each round's two numbers were measured close
    together, so machine noise partly cancels."""
    return statistics.median(a / b for a, b in pairs)


def seconds_list(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


# ── 1. no-op items ─────────────────────────────────────────────────────────────
# PostgreSQL planner statistics of job_items when the measured job runs. Autovacuum is
# off for job_items during the run, so that it does not ANALYZE mid-run.
STATS_LABELS = {
    "sqlite": "(SQLite: no ANALYZE)",
    "analyzed": "ANALYZE after enqueue",
    "none": "none yet",
    "earlier": "of an earlier job only",
}


@dataclass(frozen=True)
class NoopCase:
    backend: str
    concurrency: int
    stats: str = "analyzed"  # a key of STATS_LABELS

    @property
    def label(self) -> str:
        return f"{self.backend}, concurrency {self.concurrency}"


def noop_cases(backends: list[str]) -> list[NoopCase]:
    cases = [NoopCase("sqlite", c, "sqlite") for c in (1, POOL)]
    if "postgresql" in backends:
        cases += [NoopCase("postgresql", c) for c in (1, POOL)]
        cases += [NoopCase("postgresql", 1, "none"), NoopCase("postgresql", 1, "earlier")]
    return cases


def enqueue_noop(service: JobService, n_items: int, prefix: str) -> str:
    keys = [f"{prefix}/{i:07d}.jpg" for i in range(n_items)]
    return service.enqueue(work.NOOP_JOB, items=keys)["id"]


def add_earlier_job(factory: Any, service: JobService, n_items: int) -> None:
    """A library that has run a job before: its items (of a type no worker here
    serves, marked succeeded in bulk) are in the statistics; the next job is not."""
    keys = [f"earlier/{i:07d}.jpg" for i in range(n_items)]
    job_id = service.enqueue(OTHER_JOB, items=keys)["id"]
    with factory.begin() as session:
        session.execute(
            update(job_items).where(job_items.c.job_id == job_id).values(state="succeeded")
        )
    analyze(factory)


def analyze(factory: Any) -> None:
    with factory.begin() as session:
        session.execute(text("ANALYZE job_items"))


def noop_run(case: NoopCase, n_items: int) -> dict[str, Any]:
    """One job of ``n_items`` no-op items through an in-process worker."""
    with fresh_database(case.backend) as url, opened(url) as (factory, service):
        if case.backend == "postgresql":
            with factory.begin() as session:
                session.execute(text("ALTER TABLE job_items SET (autovacuum_enabled = off)"))
        if case.stats == "earlier":
            add_earlier_job(factory, service, n_items)
        job_id = enqueue_noop(service, n_items, "photos/2024")
        if case.stats == "analyzed":
            analyze(factory)
        wall = run_worker(factory, service, worker_config(case.concurrency))
        check = check_job(service, job_id, n_items)
    return {"wall": wall, "check": check}


def bare_noop(n_items: int, concurrency: int) -> float:
    """The same no-op calls without a coordinator: directly, or through a thread pool
    with the runtime's window of 2 × pool size items in flight."""
    params: dict[str, Any] = {}
    keys = [str(i) for i in range(n_items)]
    started = time.perf_counter()
    if concurrency == 1:
        for key in keys:
            work.noop_item(params, key)
        return time.perf_counter() - started
    with ThreadPoolExecutor(concurrency) as pool:
        in_flight: set[Any] = set()
        for key in keys:
            in_flight.add(pool.submit(work.noop_item, params, key))
            if len(in_flight) >= 2 * concurrency:
                _, in_flight = wait(in_flight, return_when=FIRST_COMPLETED)
        wait(in_flight)
    return time.perf_counter() - started


def noop_section(backends: list[str], sizes: Sizes) -> dict[str, float]:
    n, small = sizes.noop_items, sizes.noop_items // 4
    heading(
        f"1a. coordination per item: one job of {n:,} no-op items, in-process Worker.run() "
        "(burst, batch_size 50, thread executor)"
    )
    note("every microsecond is coordination: the item function returns at once")
    note(
        f"small job: the same with {small:,} items, once (a cost per item that grows with "
        "the job's size means a query that reads all the job's items every batch)"
    )
    note(
        "PostgreSQL statistics of job_items: ANALYZE right after the enqueue (the best "
        "case), none yet (a new library), or only of an earlier job (a library in use: a "
        "new job's id is never in the statistics until autovacuum analyzes again)"
    )
    cases = noop_cases(backends)
    runs: dict[NoopCase, list[dict[str, Any]]] = {case: [] for case in cases}
    for round_ in range(sizes.noop_rounds):
        for case in cases:
            if round_ == 0 or case.backend == "sqlite":  # PostgreSQL: slow, so once
                runs[case].append(noop_run(case, n))
    smaller = {case: noop_run(case, small) for case in cases}
    bare = {c: bare_noop(n, c) for c in (1, POOL)}
    base = min(r["wall"] for r in runs[cases[0]])
    rows = []
    for case in cases:
        best = min(runs[case], key=lambda r: r["wall"])
        per_item, small_per_item = best["wall"] / n * 1e6, smaller[case]["wall"] / small * 1e6
        checks = {r["check"] for r in [*runs[case], smaller[case]]}
        rows.append([
            case.label, STATS_LABELS[case.stats], best["wall"],
            seconds_list([r["wall"] for r in runs[case]]), n / best["wall"], per_item,
            bare[case.concurrency] / n * 1e6, ratio(best["wall"], base), small_per_item,
            ratio(per_item, small_per_item), "ok" if checks == {"ok"} else " ".join(checks),
        ])  # fmt: skip
    table(
        ["worker", "job_items statistics", "wall s", "each round s", "items/s", "µs/item",
         "bare µs/item", "vs sqlite c1", f"µs/item, {small:,} items", "growth", "check"],
        rows,
    )  # fmt: skip
    note(
        "bare µs/item: the same calls with no coordinator (concurrency 1: a plain loop; 2: "
        "a ThreadPoolExecutor(2) with at most 4 in flight, as JobContext.map does)"
    )
    return {
        b: n / min(r["wall"] for c in cases if c.backend == b for r in runs[c]) for b in backends
    }


# ── 1b. worker processes ───────────────────────────────────────────────────────
def cli_env(url: str, home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(
        PHOTO_PIPELINE_DATABASE_URL=url,
        PHOTO_PIPELINE_HOME=home,
        PYTHONPATH=os.pathsep.join(filter(None, [str(BENCH_DIR), env.get("PYTHONPATH")])),
    )
    return env


def start_cli_workers(url: str, home: str, count: int) -> list[subprocess.Popen[bytes]]:
    command = [
        sys.executable, "-m", "photo_pipeline", "worker", "--burst", "--import", "_image_job",
        "--types", work.NOOP_JOB, "--concurrency", "1", "--executor", "thread",
        "--poll-seconds", "0.05", "--log-level", "warning",
    ]  # fmt: skip
    env = cli_env(url, home)
    return [subprocess.Popen(command, env=env) for _ in range(count)]


def wait_for_workers(factory: Any, procs: list[subprocess.Popen[bytes]]) -> None:
    registry = WorkerRegistry(factory)
    deadline = time.monotonic() + 120
    while len(registry.list()) < len(procs):
        if time.monotonic() > deadline or any(p.poll() is not None for p in procs):
            raise RuntimeError("worker processes did not start")
        time.sleep(0.02)


def finish_processes(procs: list[subprocess.Popen[bytes]]) -> list[int]:
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=PROCESS_TIMEOUT_S))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return codes


def open_gate(service: JobService, gate_id: str) -> None:
    job = service.claim([GATE_JOB], "bench-gate")
    assert job is not None and job["id"] == gate_id
    service.transition(gate_id, "succeeded", fencing_token=job["fencing_token"])


def processes_run(backend: str, n_items: int, count: int) -> dict[str, Any]:
    """``count`` CLI worker processes, one job each, started together: the jobs wait
    on a gate job that is completed once every worker has registered."""
    share = n_items // count
    with (
        fresh_database(backend) as url,
        opened(url) as (factory, service),
        tempfile.TemporaryDirectory(prefix="pp_bench_home_") as home,
    ):
        gate = service.enqueue(GATE_JOB)
        job_ids = [
            service.enqueue(
                work.NOOP_JOB,
                items=[f"photos/{n}/{i:07d}.jpg" for i in range(share)],
                prerequisites=[gate["id"]],
            )["id"]
            for n in range(count)
        ]
        analyze(factory)
        launched = time.perf_counter()
        procs = start_cli_workers(url, home, count)
        try:
            wait_for_workers(factory, procs)
            startup = time.perf_counter() - launched
            open_gate(service, gate["id"])
            codes = finish_processes(procs)
        except BaseException:
            for proc in procs:  # gated burst workers would wait for ever
                proc.kill()
                proc.wait()
            raise
        window, owners = job_window(factory, job_ids)
        checks = {check_job(service, job_id, share) for job_id in job_ids}
    check = "ok" if checks == {"ok"} and set(codes) == {0} else f"FAILED {checks} {codes}"
    return {"window": window, "startup": startup, "items": share * count, "owners": owners,
            "check": check}  # fmt: skip


def job_window(factory: Any, job_ids: list[str]) -> tuple[float, int]:
    """Seconds from the first claim to the last job finished, from the database; and
    how many distinct workers claimed the jobs."""
    with factory() as session:
        first, last = session.execute(
            select(func.min(jobs.c.started_at), func.max(jobs.c.finished_at)).where(
                jobs.c.id.in_(job_ids)
            )
        ).one()
        owners = session.scalar(
            select(func.count(job_events.c.message.distinct())).where(
                job_events.c.job_id.in_(job_ids), job_events.c.event_type == "claimed"
            )
        )
    return (last - first).total_seconds(), owners


def processes_section(backends: list[str], sizes: Sizes, in_process: dict[str, float]) -> None:
    n = sizes.noop_items
    heading(f"1b. {n:,} no-op items over 1 and {POOL} `photo-pipeline worker --burst` processes")
    note(
        f"one job per process ({n:,} items split evenly), concurrency 1 each; time = first "
        "claim to last job finished, from the jobs table (process start-up excluded, shown "
        "apart); PostgreSQL after ANALYZE"
    )
    rows = []
    for backend in backends:
        one = None
        for count in (1, POOL):
            result = processes_run(backend, n, count)
            rate = result["items"] / result["window"]
            one = one or rate
            rows.append([
                backend, count, result["owners"], result["startup"], result["window"], rate,
                ratio(rate, one), ratio(rate, in_process[backend]), result["check"],
            ])  # fmt: skip
    table(
        ["backend", "processes", "workers that claimed", "start-up s", "run s", "items/s",
         "vs 1 process", "vs best in-process", "check"],
        rows,
    )  # fmt: skip
    note(f"this machine has {os.cpu_count()} cores, shared with the database server")


# ── 2. image job ───────────────────────────────────────────────────────────────
def spawn_pool() -> ProcessPoolExecutor:
    return ProcessPoolExecutor(POOL, mp_context=get_context("spawn"))


def start_pool(pool: ProcessPoolExecutor) -> None:
    """Return once every process of a fresh pool has run a task."""
    pids: set[int] = set()
    while len(pids) < POOL:
        pids.update(pool.map(work.pid_after, [0.02] * POOL))


def machine_parallelism(rounds: int = 3) -> float:
    """How much faster 2 processes do 2 units of pure-Python work than 1 process does
    (2.00 = two whole cores)."""
    unit = 3_000_000
    factors = []
    with spawn_pool() as pool:
        start_pool(pool)
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
    pool = spawn_pool()
    start_pool(pool)
    ready = time.perf_counter()
    pool.shutdown(wait=True)
    return ready - started, time.perf_counter() - ready


def make_photos(directory: Path, count: int, size: tuple[int, int]) -> list[str]:
    paths = [str(directory / f"IMG_{i:04d}.jpg") for i in range(count)]
    with spawn_pool() as pool:
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


def cpu_seconds() -> float:
    """CPU time of this process (all threads) and of its children that have ended."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


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
        with spawn_pool() as pool, warm_up_params(paths) as (keys, params):
            pids = set(pool.map(work.warm_item, repeat(params), keys))
            if len(pids) != POOL:
                raise RuntimeError(f"warm-up reached {len(pids)} of {POOL} processes")
            started, cpu = time.perf_counter(), cpu_seconds() + live_children_cpu()
            list(pool.map(work.make_thumbnail, paths, repeat(out_dir)))
            cpu = cpu_seconds() + live_children_cpu() - cpu
            return Measurement(time.perf_counter() - started, cpu)
    started, cpu = time.perf_counter(), cpu_seconds()
    if case.kind == "sequential":
        for path in paths:
            work.make_thumbnail(path, out_dir)
    else:
        pool = ThreadPoolExecutor(POOL) if case.kind == "thread" else spawn_pool()
        with pool:
            list(pool.map(work.make_thumbnail, paths, repeat(out_dir)))
    return Measurement(time.perf_counter() - started, cpu_seconds() - cpu)


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
        cpu, own = cpu_seconds(), time.thread_time()
        wall = run_worker(factory, service, worker_config(POOL, case.kind))
        cpu, own = cpu_seconds() - cpu, time.thread_time() - own
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
    results: Results = {case.key: [] for case in cases}
    for round_ in range(rounds):
        for case in cases if round_ % 2 == 0 else cases[::-1]:
            with output_dir(len(paths)) as out:
                if case.backend is None:
                    measured = bare_images(case, paths, out)
                else:
                    measured = runtime_images(case, dbs[case.backend], paths, out)
            results[case.key].append(measured)
    return results


def image_section(backends: list[str], sizes: Sizes) -> None:
    n, (width, height) = sizes.photos, sizes.photo_size
    heading(
        f"2. image job: {n} JPEGs of {width}×{height} (quality 90) → draft → thumbnail "
        f"256×256 → exif_transpose → WebP, pools of {POOL}"
    )
    with open_databases(backends) as dbs, tempfile.TemporaryDirectory(prefix="pp_bench_") as tmp:
        started = time.perf_counter()
        paths = make_photos(Path(tmp), n, sizes.photo_size)
        megabytes = sum(Path(p).stat().st_size for p in paths) / 1e6
        note(
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
    return median_ratio(pairs)


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
    table(
        ["run", "median wall s", "each round s", "wall ms/photo", "speed vs sequential",
         "CPU ms/photo", "run() thread CPU ms/photo", "wall runtime/bare = share",
         "CPU runtime/bare = share"],
        rows,
    )  # fmt: skip
    note(
        "fresh: the time includes starting the spawned pool and shutting it down (Worker.run() "
        "makes its pool per run: a `--burst` worker or `job wait` pays it each time); warm: "
        "each process of the pool has made a thumbnail before (a long-running worker; for "
        "the Worker: the job's claim → finish time in the jobs table, after a small warm-up "
        "job in the same run()); CPU: of this process and its pool processes (not of the "
        "PostgreSQL server; not measured for the Worker with a warm pool); run() thread "
        "CPU: the coordinator's own work (claim, item pages, result batches, finish; with the "
        "process executor also submitting items and taking results), start and stop included"
    )
    note(
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
        note(
            f"coordination share of {what} time: {min(shares.values()):+.1%} … "
            f"{shares[worst]:+.1%} ({verdict} {SHARE_TARGET:.0%}; the highest: {worst})"
        )
    work_cpu = statistics.median(m.cpu for m in results[None, "sequential", False])
    own_shares = [
        statistics.median(m.own for m in results[case.key]) / work_cpu
        for case in cases
        if case.backend is not None and not case.warm
    ]
    note(
        "coordinator's own CPU (the run() thread) against the CPU of the photos' work (bare "
        f"sequential loop): {min(own_shares):.1%} … {max(own_shares):.1%} (the PostgreSQL "
        "server's CPU not included)"
    )
    start = statistics.median(s for s, _ in start_stop)
    stop = statistics.median(s for _, s in start_stop)
    note(
        f"a fresh spawned pool of {POOL} processes takes {start:.2f} s until each has run a "
        f"task (spawn + imports) and {stop:.2f} s to shut down (median of {len(start_stop)})"
    )
    note("process vs thread (wall time of process / thread; below 1: process is faster):")
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
        note(
            f"{label}: fresh pool {fresh:.2f}x ({faster(fresh)}), warm pool {warm:.2f}x "
            f"({faster(warm)}); {cpu}",
            indent=4,
        )


def faster(factor: float) -> str:
    """Words for a process/thread wall-time ratio."""
    if factor > 1:
        return f"thread {(factor - 1) * 100:.0f}% faster"
    return f"process {(1 / factor - 1) * 100:.0f}% faster"


# ── main ───────────────────────────────────────────────────────────────────────
def timed(section: Callable[..., Any], *args: Any) -> Any:
    started = time.perf_counter()
    result = section(*args)
    note(f"(section took {time.perf_counter() - started:.0f} s)")
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    began = time.perf_counter()

    print(f"photo-pipeline worker runtime benchmark ({'quick' if args.quick else 'full'} run)")
    print(
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"SQLAlchemy {sqlalchemy.__version__}, Pillow {PIL.__version__}"
    )
    backends = ["sqlite"]
    error = postgres_error()
    if error is None:
        backends.append("postgresql")
        print(f"PostgreSQL {postgres_version()} at {make_url(PG_URL)!r}")
    else:
        print(f"PostgreSQL at {PG_URL} unreachable ({error}): SQLite only")
    parallel = machine_parallelism(sizes.image_rounds)
    print(
        f"2 processes of pure-Python work finish {parallel:.2f}x as fast as 1 process doing "
        f"both (2.00x = {POOL} whole cores; less: the cores are busy with other work)"
    )

    in_process = timed(noop_section, backends, sizes)
    timed(processes_section, backends, sizes, in_process)
    timed(image_section, backends, sizes)
    print(f"\ndone in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
