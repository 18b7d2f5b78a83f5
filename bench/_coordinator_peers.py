"""The coordinator benchmark's peers section: the project's real ``Worker`` runtime
against each peer's own worker on the same PostgreSQL (and Redis, for Celery), no-op
jobs, 1 and 4 worker processes, rounds in turns (issue #32.3).

* photo-pipeline: ``JobService.enqueue_many`` by 1,000, then ``Worker`` processes in
  burst mode (``WorkerConfig(burst=True)``: leases, heartbeats, recovery sweeps, the
  idle loop; they exit once nothing is left), in a schema of its own; with one job
  slot (one job at a time, a claim per job) and with 10 (``jobs=10``: a claim of
  one statement fills every free slot, as PgQueuer's batch of 10 fetches 10);
* Procrastinate: ``batch_defer`` by 1,000, ``run_worker_async(wait=False)`` (exits
  when the queue is empty), concurrency 1, in a database of its own;
* PgQueuer: ``Queries.enqueue`` of 1,000 at once, ``QueueManager.run(mode=drain)``
  at its default batch size (10) and at 1, in a database of its own;
* Celery + Redis: ``apply_async`` one by one (Celery has no batch enqueue), workers
  with the solo pool (one task at a time per process), no result backend; a task
  counts itself in Redis (one INCR) so that the end can be seen, and the workers are
  stopped once every task ran. Queue and counter names are this run's own.

Every database is created under a unique name and dropped afterwards (never one
another run or the test suite uses). Each case runs once a round; the order of the
cases turns every round (A B C D, B C D A, …). The figures are medians with min–max
of the rounds, beside the load average when each round ended.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import time
import uuid
from collections.abc import Callable
from typing import Any

import psycopg

from bench import _harness as h
from bench._coordinator_sizes import JOB_TYPE, Sizes
from bench._coordinator_throughput import (
    PROCESS_COUNTS,
    _report,
    procrastinate,
    procrastinate_throughput,
    run_processes,
    verify_service_jobs,
)
from bench._databases import fresh_database, fresh_pg_database, opened

try:
    import pgqueuer
    from pgqueuer.types import QueueExecutionMode
except ImportError:  # the `bench` extra is not installed
    pgqueuer = None

try:
    import celery
    import redis
except ImportError:  # the `bench` extra is not installed
    celery = None
    redis = None

REDIS_URL = os.environ.get("PHOTO_PIPELINE_BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")
PGQUEUER_DB = "pp_bench_pgqueuer"  # + a suffix of its own each run
CELERY_TIMEOUT_S = 900
OURS = ("photo-pipeline Worker (jobs 1)", "photo-pipeline Worker (jobs 10)")


# ── photo-pipeline: the real Worker ────────────────────────────────────────────
def noop_handler(_ctx: Any) -> None:
    return None


def runtime_worker(url: str, slots: int, barrier: Any, results: Any, index: int) -> None:
    """One worker process: the real ``Worker`` in burst mode, ``slots`` jobs at once."""
    from photo_pipeline.jobs.handlers import HandlerRegistry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    def body() -> tuple[float, float, int]:
        handlers = HandlerRegistry()
        handlers.register(JOB_TYPE, noop_handler)
        with opened(url) as (factory, service):
            config = WorkerConfig(job_types=(JOB_TYPE,), burst=True, jobs=slots)
            worker = Worker(service, WorkerRegistry(factory), handlers, config)
            barrier.wait()
            start = time.monotonic()
            worker.run()
            return start, time.monotonic(), 0  # jobs done: counted from the database

    _report(results, body)


def runtime_throughput(n_jobs: int, procs: int, slots: int = 1) -> dict[str, Any]:
    with fresh_database("postgresql") as url:
        with opened(url) as (_, service):
            started = time.perf_counter()
            for start in range(0, n_jobs, 1000):
                service.enqueue_many([{"job_type": JOB_TYPE}] * min(1000, n_jobs - start))
            enqueue_s = time.perf_counter() - started
        run = run_processes(runtime_worker, (url, slots), procs)
        with opened(url) as (factory, _):
            check = verify_service_jobs(factory, n_jobs, n_jobs)
    return {**run, "enqueue_per_s": n_jobs / enqueue_s, "check": check}


# ── PgQueuer ───────────────────────────────────────────────────────────────────
def pgqueuer_worker(conninfo: str, batch: int, barrier: Any, results: Any, index: int) -> None:
    """One worker process: PgQueuer's QueueManager, drained (exits once empty)."""

    async def run() -> tuple[float, float, int]:
        done = 0
        connection = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
        async with connection:
            manager = pgqueuer.QueueManager(pgqueuer.Queries(pgqueuer.PsycopgDriver(connection)))

            @manager.entrypoint("bench_noop")
            async def noop(_job: Any) -> None:
                nonlocal done
                done += 1

            barrier.wait()
            start = time.monotonic()
            await manager.run(batch_size=batch, mode=QueueExecutionMode.drain)
            return start, time.monotonic(), done

    _report(results, lambda: asyncio.run(run()))


def pgqueuer_throughput(n_jobs: int, procs: int, batch: int) -> dict[str, Any]:
    with fresh_pg_database(PGQUEUER_DB) as conninfo:

        async def prepare() -> float:
            connection = await psycopg.AsyncConnection.connect(conninfo, autocommit=True)
            async with connection:
                queries = pgqueuer.Queries(pgqueuer.PsycopgDriver(connection))
                await queries.install()
                started = time.perf_counter()
                for start in range(0, n_jobs, 1000):
                    size = min(1000, n_jobs - start)
                    await queries.enqueue(["bench_noop"] * size, [None] * size, [0] * size)
                return time.perf_counter() - started

        enqueue_s = asyncio.run(prepare())
        run = run_processes(pgqueuer_worker, (conninfo, batch), procs)
        with psycopg.connect(conninfo) as conn:
            left = conn.execute("SELECT count(*) FROM pgqueuer").fetchone()
        done = sum(run["done"])
        ok = done == n_jobs and left is not None and left[0] == 0
        remaining = left[0] if left is not None else "?"
        check = ("ok " if ok else "FAILED ") + f"{done}/{n_jobs} ran, {remaining} left"
    return {**run, "enqueue_per_s": n_jobs / enqueue_s, "check": check}


# ── Celery + Redis ─────────────────────────────────────────────────────────────
def celery_app(queue: str, counter: str) -> Any:
    app = celery.Celery("pp_bench", broker=REDIS_URL)
    app.conf.update(
        task_default_queue=queue,
        task_ignore_result=True,
        worker_hijack_root_logger=False,
        broker_connection_retry_on_startup=True,
        worker_redirect_stdouts=False,
    )
    counts = redis.Redis.from_url(REDIS_URL)

    @app.task(name="bench_noop")
    def noop() -> None:
        counts.incr(counter)

    return app


def celery_worker(queue: str, counter: str, barrier: Any, index: int) -> None:
    """One worker process: a Celery worker, solo pool, until the bench stops it."""
    import logging

    logging.getLogger("celery").setLevel(logging.WARNING)
    app = celery_app(queue, counter)
    worker = app.Worker(
        pool="solo",
        concurrency=1,
        queues=[queue],
        hostname=f"pp-bench-{index}-{uuid.uuid4().hex[:6]}@localhost",
        without_heartbeat=True,
        without_mingle=True,
        without_gossip=True,
        loglevel="WARNING",
        quiet=True,
    )
    barrier.wait()
    worker.start()


def celery_throughput(n_jobs: int, procs: int) -> dict[str, Any]:
    import multiprocessing

    name = f"pp_bench_{uuid.uuid4().hex[:12]}"
    queue, counter = f"{name}_queue", f"{name}_done"
    counts = redis.Redis.from_url(REDIS_URL)
    app = celery_app(queue, counter)
    task = app.tasks["bench_noop"]
    started = time.perf_counter()
    with app.producer_or_acquire() as producer:
        for _ in range(n_jobs):
            task.apply_async(queue=queue, producer=producer)
    enqueue_s = time.perf_counter() - started
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(procs + 1, timeout=120)
    workers = [
        ctx.Process(target=celery_worker, args=(queue, counter, barrier, i), daemon=True)
        for i in range(procs)
    ]
    try:
        for proc in workers:
            proc.start()
        barrier.wait()
        start = time.monotonic()
        deadline = start + CELERY_TIMEOUT_S
        while int(counts.get(counter) or 0) < n_jobs and time.monotonic() < deadline:
            time.sleep(0.002)
        end = time.monotonic()
    finally:
        for proc in workers:
            proc.terminate()
        for proc in workers:
            proc.join(timeout=30)
        done = int(counts.get(counter) or 0)
        left = int(counts.llen(queue) or 0)
        counts.delete(counter, queue)
    ok = done == n_jobs and left == 0
    check = ("ok " if ok else "FAILED ") + f"{done}/{n_jobs} ran, {left} left"
    rate = n_jobs / enqueue_s
    return {"wall": end - start, "done": [done], "enqueue_per_s": rate, "check": check}


def redis_error() -> str | None:
    if redis is None:
        return "celery/redis not installed (pip install -e '.[bench]')"
    try:
        redis.Redis.from_url(REDIS_URL, socket_connect_timeout=2).ping()
    except Exception as exc:
        return f"{REDIS_URL}: {exc}"
    return None


# ── the section ────────────────────────────────────────────────────────────────
def peers_section(backends: list[str], sizes: Sizes) -> None:
    n, rounds = sizes.jobs, sizes.rounds
    h.heading(
        f"1b. the real Worker against each peer's worker: {n:,} no-op jobs, "
        f"1 and 4 processes, {rounds} rounds in turns"
    )
    if "postgresql" not in backends:
        h.note("PostgreSQL is not reachable: no peers measured")
        return
    systems: dict[str, Callable[[int], dict[str, Any]]] = {
        OURS[0]: lambda procs: runtime_throughput(n, procs, 1),
        OURS[1]: lambda procs: runtime_throughput(n, procs, 10),
    }
    missing = []
    if procrastinate is not None:
        systems["Procrastinate"] = lambda procs: procrastinate_throughput(n, procs)
    else:
        missing.append("procrastinate")
    if pgqueuer is not None:
        systems["PgQueuer (batch 10)"] = lambda procs: pgqueuer_throughput(n, procs, 10)
        systems["PgQueuer (batch 1)"] = lambda procs: pgqueuer_throughput(n, procs, 1)
    else:
        missing.append("pgqueuer")
    redis_problem = redis_error()
    if redis_problem is None:
        systems["Celery + Redis"] = lambda procs: celery_throughput(n, procs)
    else:
        missing.append(f"celery ({redis_problem})")
    if missing:
        h.note(f"not measured: {', '.join(missing)} (pip install -e '.[bench]')")
    print(f"  {h.versions('procrastinate', 'pgqueuer', 'celery', 'redis')}", flush=True)
    cases = [(system, procs) for procs in PROCESS_COUNTS for system in systems]
    loads: dict[tuple[str, int], list[float]] = {case: [] for case in cases}

    def measured(case: tuple[str, int]) -> dict[str, Any]:
        system, procs = case
        result = systems[system](procs)
        loads[case].append(os.getloadavg()[0])
        return {**result, "rate": n / result["wall"]}

    runs = h.alternate({c: lambda c=c: measured(c) for c in cases}, rounds, order="rotate")

    def spread(values: list[float]) -> str:
        return f"{statistics.median(values):,.0f} ({min(values):,.0f}–{max(values):,.0f})"

    rows = []
    for system, procs in cases:
        results = runs[system, procs]
        rates = [r["rate"] for r in results]
        checks = {r["check"].split()[0] for r in results}
        rows.append([
            system, procs, spread(rates), spread([r["enqueue_per_s"] for r in results]),
            " ".join(f"{rate:.0f}" for rate in rates),
            " ".join(f"{load:.1f}" for load in loads[system, procs]),
            results[-1]["check"] if checks == {"ok"} else "FAILED in a round",
        ])  # fmt: skip
        h.figure(f"{system}, {procs} proc: jobs/s (median)", statistics.median(rates))
    h.table(
        ["system", "procs", "jobs/s median (min–max)", "enqueue/s median (min–max)",
         "each round", "load (1 min) after each", "check"],
        rows,
    )  # fmt: skip
    pairs = [(OURS[1], OURS[0])] + [(o, s) for o in OURS for s in systems if s not in OURS]
    for procs in PROCESS_COUNTS:
        for ours, system in pairs:
            mine = [r["rate"] for r in runs[ours, procs]]
            # Each round's pair ran within one turn of the cases: the ratio of the pair.
            theirs = [r["rate"] for r in runs[system, procs]]
            ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
            value = h.median_ratio(
                zip(mine, theirs, strict=True), name=f"{ours} / {system}, {procs} proc"
            )
            h.note(
                f"{ours} / {system}, {procs} proc: {value:.2f}x "
                f"({min(ratios):.2f}–{max(ratios):.2f}, each round's pair)"
            )
    h.note(
        "jobs/s: from the start barrier to the last worker done (Celery: to the last "
        "task's count); enqueue/s: photo-pipeline enqueue_many and Procrastinate "
        "batch_defer by 1,000, PgQueuer enqueue of 1,000 at once, Celery apply_async one "
        "by one. The photo-pipeline Worker pays per job a claim and a durable success "
        "(each committed), a heartbeat thread and the burst loop's checks; PgQueuer "
        "fetches up to its batch per query and writes completions in batches"
    )
