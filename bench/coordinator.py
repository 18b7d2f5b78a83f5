"""Benchmark the durable job coordinator (JobService) on SQLite and PostgreSQL.

Run with ``.venv/bin/python bench/coordinator.py [--quick] [--only SECTIONS] [--backends B]``
(``--help``). It prints, per backend:

1. claim + complete throughput of no-op jobs with 1 and 4 worker processes, and on the
   same PostgreSQL the same workload on Procrastinate (the peer to beat);
2. item updates per second, batched (``set_items``) vs one by one (``set_item``);
3. median claim latency with a short vs a long queue, and behind a long queue of
   another job type.

Every measurement gets a fresh database (a SQLite file in a temporary directory, a
PostgreSQL schema or database) that is removed afterwards. PostgreSQL comes from
``PHOTO_PIPELINE_TEST_DATABASE_URL``; when it is unreachable only SQLite is measured.
Timings on a small shared machine are noisy: compare the ratios, not the raw numbers.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import multiprocessing
import os
import platform
import random
import statistics
import sys
import tempfile
import textwrap
import threading
import time
import traceback
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import timedelta
from importlib import metadata
from typing import Any

import psycopg
import sqlalchemy
from sqlalchemy import create_engine, event, func, insert, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import open_database, write_session
from photo_pipeline.db.schema import job_events, jobs
from photo_pipeline.jobs import JobService, utc_now
from photo_pipeline.jobs.enqueue import _request_hash

try:
    import procrastinate
except ImportError:  # the `bench` extra is not installed
    procrastinate = None

PG_URL = os.environ.get(
    "PHOTO_PIPELINE_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)
PROCRASTINATE_DB = "pp_bench_procrastinate"
JOB_TYPE = "noop"
OTHER_JOB_TYPE = "thumbnail"
PROCESS_COUNTS = (1, 4)
LATENCY_TARGET = 1.5
ENQUEUE_TARGET = 10_000
WAKE_TARGET_MS = 50
START_TIMEOUT_S = 120
RUN_TIMEOUT_S = 900


@dataclass(frozen=True)
class Sizes:
    jobs: int  # no-op jobs per throughput run
    items_total: int  # items of each item-update job
    items_single: int  # items updated one by one (the rest of that job stays queued)
    item_batch: int
    queues: tuple[int, int]  # short and long queue for the claim latency
    claims: int  # timed claims per queue size
    rounds: int  # throughput runs per configuration (the best is shown)
    enqueue: int  # jobs enqueued in batches
    wakeups: int  # wake-up latency samples


FULL = Sizes(
    jobs=2000, items_total=20_000, items_single=2_000, item_batch=500,
    queues=(1_000, 100_000), claims=200, rounds=2, enqueue=50_000, wakeups=50,
)  # fmt: skip
QUICK = Sizes(
    jobs=200, items_total=2_000, items_single=200, item_batch=500,
    queues=(1_000, 10_000), claims=50, rounds=1, enqueue=5_000, wakeups=10,
)  # fmt: skip


# ── output ─────────────────────────────────────────────────────────────────────
def heading(title: str) -> None:
    print(f"\n{title}\n{'─' * len(title)}", flush=True)


def note(message: str, indent: int = 2) -> None:
    prefix = " " * indent
    text_ = textwrap.fill(message, 100, initial_indent=prefix, subsequent_indent=prefix + "  ")
    print(text_, flush=True)


def table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [headers, *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right = [i > 0 and all(_numeric(row[i]) for row in rows) for i in range(len(headers))]
    for n, row in enumerate(cells):
        pairs = zip(row, widths, right, strict=True)
        line = "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in pairs)
        print(f"  {line}".rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    sys.stdout.flush()


def _numeric(value: Any) -> bool:
    """Numbers, ratios ("1.2x") and blanks are right-aligned."""
    return isinstance(value, int | float) or value == "" or value[:1].isdigit()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


# ── databases ──────────────────────────────────────────────────────────────────
def postgres_error() -> str | None:
    """None when the benchmark PostgreSQL answers, else why not."""
    try:
        engine = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@contextmanager
def fresh_database(backend: str) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend``; remove it afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="pp_bench_") as tmp:
            yield f"sqlite:///{tmp}/library.sqlite3"
        return
    schema = f"bench_{uuid.uuid4().hex[:16]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


def libpq_url(database: str) -> str:
    """PG_URL as a plain libpq URL (for psycopg / procrastinate) naming ``database``."""
    url = make_url(PG_URL).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


@contextmanager
def fresh_pg_database(name: str) -> Iterator[str]:
    """CREATE DATABASE ``name`` on the benchmark server, yield its URL, drop it."""
    with psycopg.connect(libpq_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield libpq_url(name)
    finally:
        with psycopg.connect(libpq_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def opened(url: str, **service_kwargs: Any) -> Iterator[tuple[sessionmaker[Session], JobService]]:
    factory = open_database(url)
    try:
        yield factory, JobService(factory, **service_kwargs)
    finally:
        factory.kw["bind"].dispose()


def bulk_enqueue(factory: sessionmaker[Session], count: int, job_type: str = JOB_TYPE) -> None:
    """Insert ``count`` queued jobs without params or items (and their "queued" events)
    with the very columns ``JobService.enqueue`` writes, in a few multi-row INSERTs.
    They run in insertion order, before anything enqueued later."""
    now = utc_now()
    request_hash = _request_hash(job_type, None, {}, [], [], 0, 3)
    chunk = 5_000
    for start in range(0, count, chunk):
        rows = []
        for i in range(start, min(start + chunk, count)):
            run_after = now - timedelta(microseconds=count - i)  # FIFO, all runnable
            rows.append(
                {
                    "id": str(uuid.uuid4()),
                    "job_type": job_type,
                    "state": "queued",
                    "priority": 0,
                    "params": {},
                    "request_hash": request_hash,
                    "lock_key": None,
                    "idempotency_key": None,
                    "waiting_for": 0,
                    "attempts": 0,
                    "max_attempts": 3,
                    "run_after": run_after,
                    "fencing_token": 0,
                    "version": 1,
                    "created_at": run_after,
                    "updated_at": run_after,
                }
            )
        events = [
            {
                "job_id": r["id"],
                "event_type": "queued",
                "message": None,
                "data": {"items": 0},
                "created_at": r["created_at"],
            }
            for r in rows
        ]
        with write_session(factory) as session:
            session.execute(insert(jobs), rows)
            session.execute(insert(job_events), events)


# ── worker processes ───────────────────────────────────────────────────────────
def run_processes(target: Callable[..., None], args: tuple[Any, ...], count: int) -> dict:
    """Start ``count`` spawned processes running ``target(*args, barrier, results, i)``,
    released together by a barrier. Returns the wall time from the barrier to the
    last worker finishing, and the jobs each worker completed."""
    ctx = multiprocessing.get_context("spawn")
    barrier = ctx.Barrier(count, timeout=START_TIMEOUT_S)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=target, args=(*args, barrier, results, i), daemon=True)
        for i in range(count)
    ]
    for proc in procs:
        proc.start()
    reports = [results.get(timeout=START_TIMEOUT_S + RUN_TIMEOUT_S) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
    errors = [r["error"] for r in reports if "error" in r]
    if errors:
        raise RuntimeError("a worker process failed:\n" + errors[0])
    wall = max(r["end"] for r in reports) - min(r["start"] for r in reports)
    return {"wall": wall, "done": [r["done"] for r in reports]}


def _report(results: Any, body: Callable[[], tuple[float, float, int]]) -> None:
    try:
        start, end, done = body()
        results.put({"start": start, "end": end, "done": done})
    except BaseException:
        results.put({"error": traceback.format_exc()})


def service_worker(url: str, barrier: Any, results: Any, index: int) -> None:
    """One worker process: claim → succeeded until the queue is empty."""

    def body() -> tuple[float, float, int]:
        worker_id = f"bench-{index}"
        # Production settings: the default lease, and a recovery sweep every 5 s.
        with opened(url) as (factory, service):
            with factory() as session:  # connect (and open the SQLite file) before timing
                session.execute(text("SELECT 1"))
            barrier.wait()
            start, done = time.monotonic(), 0
            while (job := service.claim([JOB_TYPE], worker_id)) is not None:
                service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
                done += 1
            return start, time.monotonic(), done

    _report(results, body)


_NOOP_RUNS: Counter[str] = Counter()


async def noop_task() -> None:
    _NOOP_RUNS["runs"] += 1


def procrastinate_app(conninfo: str) -> Any:
    # Procrastinate warns about an App created in __main__ because task names derive
    # from the module; the explicit task name below makes that moot.
    logging.getLogger("procrastinate.blueprints").setLevel(logging.ERROR)
    app = procrastinate.App(connector=procrastinate.PsycopgConnector(conninfo=conninfo))
    app.task(name="bench_noop", queue="bench")(noop_task)
    return app


def procrastinate_worker(conninfo: str, barrier: Any, results: Any, index: int) -> None:
    """One worker process: a Procrastinate worker that stops when the queue is empty."""
    logging.getLogger("procrastinate").setLevel(logging.WARNING)

    async def run() -> tuple[float, float, int]:
        app = procrastinate_app(conninfo)
        async with app.open_async():
            await app.check_connection_async()  # connect before timing
            barrier.wait()
            start = time.monotonic()
            await app.run_worker_async(
                queues=["bench"],
                name=f"bench-{index}",
                concurrency=1,  # one job at a time, like a JobService worker loop
                wait=False,  # burst mode: return once the queue is empty
                listen_notify=False,  # nothing to listen for in burst mode
                install_signal_handlers=False,
                delete_jobs="never",  # keep the rows, as JobService does
            )
            return start, time.monotonic(), _NOOP_RUNS["runs"]

    _report(results, lambda: asyncio.run(run()))


# ── 1. throughput ──────────────────────────────────────────────────────────────
def service_throughput(backend: str, n_jobs: int, procs: int) -> dict:
    with fresh_database(backend) as url:
        with opened(url) as (_, service):
            started = time.perf_counter()
            for start in range(0, n_jobs, 1000):
                service.enqueue_many([{"job_type": JOB_TYPE}] * min(1000, n_jobs - start))
            enqueue_s = time.perf_counter() - started
        run = run_processes(service_worker, (url,), procs)
        with opened(url) as (factory, _):
            check = verify_service_jobs(factory, n_jobs, sum(run["done"]))
    return {**run, "enqueue_per_s": n_jobs / enqueue_s, "check": check}


def verify_service_jobs(factory: sessionmaker[Session], n_jobs: int, reported: int) -> str:
    """Every job succeeded, was claimed exactly once and completed by one worker."""
    with factory() as session:
        query = select(jobs.c.state, func.count()).group_by(jobs.c.state)
        states = {state: count for state, count in session.execute(query)}
        attempts = session.execute(
            select(func.min(jobs.c.attempts), func.max(jobs.c.attempts))
        ).one()
        claims = session.execute(
            select(func.count(), func.count(job_events.c.job_id.distinct())).where(
                job_events.c.event_type == "claimed"
            )
        ).one()
    ok = (
        states == {"succeeded": n_jobs}
        and tuple(attempts) == (1, 1)
        and tuple(claims) == (n_jobs, n_jobs)
        and reported == n_jobs
    )
    detail = f"{states.get('succeeded', 0)}/{n_jobs} succeeded, {claims[0]} claims"
    return ("ok " if ok else "FAILED ") + detail


def procrastinate_throughput(n_jobs: int, procs: int) -> dict:
    with fresh_pg_database(PROCRASTINATE_DB) as conninfo:
        app = procrastinate_app(conninfo)
        with app.open():
            app.schema_manager.apply_schema()
            task = app.tasks["bench_noop"]
            started = time.perf_counter()
            for start in range(0, n_jobs, 1000):
                task.batch_defer(*[{} for _ in range(start, min(start + 1000, n_jobs))])
            defer_s = time.perf_counter() - started
        run = run_processes(procrastinate_worker, (conninfo,), procs)
        check = verify_procrastinate_jobs(conninfo, n_jobs, sum(run["done"]))
    return {**run, "enqueue_per_s": n_jobs / defer_s, "check": check}


def verify_procrastinate_jobs(conninfo: str, n_jobs: int, reported: int) -> str:
    with psycopg.connect(conninfo) as conn:
        states = dict(
            conn.execute("SELECT status::text, count(*) FROM procrastinate_jobs GROUP BY 1")
        )
        attempts = conn.execute("SELECT min(attempts), max(attempts) FROM procrastinate_jobs")
        attempts = attempts.fetchone()
        starts = conn.execute(
            "SELECT count(*), count(DISTINCT job_id) FROM procrastinate_events"
            " WHERE type = 'started'"
        ).fetchone()
    ok = (
        states == {"succeeded": n_jobs}
        and tuple(attempts) == (1, 1)
        and tuple(starts) == (n_jobs, n_jobs)
        and reported == n_jobs
    )
    detail = f"{states.get('succeeded', 0)}/{n_jobs} succeeded, {starts[0]} starts"
    return ("ok " if ok else "FAILED ") + detail


def statements_per_job(backend: str, n_jobs: int = 50) -> float:
    """SQL statements JobService sends per claim + complete in the steady state (no
    recovery sweep). BEGIN/COMMIT are not counted on PostgreSQL, where the driver sends
    them; SQLite's BEGIN IMMEDIATE is."""
    with fresh_database(backend) as url, opened(url, recover_every=None) as (factory, service):
        for _ in range(n_jobs):
            service.enqueue(JOB_TYPE)
        count = Counter[str]()

        def on_execute(*_args: Any) -> None:
            count["statements"] += 1

        engine = factory.kw["bind"]
        event.listen(engine, "before_cursor_execute", on_execute)
        done = 0
        while (job := service.claim([JOB_TYPE], "probe")) is not None:
            service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
            done += 1
        event.remove(engine, "before_cursor_execute", on_execute)
        return (count["statements"] - 1) / done  # minus the final, empty claim


def measure_throughput(system: str, backend: str, procs: int, *, n_jobs: int) -> dict:
    if system == "JobService":
        return service_throughput(backend, n_jobs, procs)
    return procrastinate_throughput(n_jobs, procs)


def throughput_section(backends: list[str], sizes: Sizes) -> None:
    n = sizes.jobs
    heading(f"1. claim + complete throughput: {n:,} no-op jobs, 1 and 4 worker processes")
    note("wall time = from the start barrier to the last worker finding the queue empty;")
    note(f"{sizes.rounds} interleaved rounds, the best round is shown (this machine is shared)")
    systems = [("JobService", b) for b in backends]
    if "postgresql" in backends and procrastinate is not None:
        systems.append(("procrastinate", "postgresql"))
    configs = [(system, backend, procs) for system, backend in systems for procs in PROCESS_COUNTS]
    runs: dict[tuple[str, str, int], list[dict]] = {config: [] for config in configs}
    for _ in range(sizes.rounds):
        for config in configs:
            result = measure_throughput(*config, n_jobs=n)
            runs[config].append({**result, "rate": n / result["wall"]})
    best = {config: max(results, key=lambda r: r["rate"]) for config, results in runs.items()}
    rows = []
    for system, backend, procs in configs:
        result = best[system, backend, procs]
        checks = {r["check"].split()[0] for r in runs[system, backend, procs]}
        rows.append([
            f"{system} / {backend}", procs, result["wall"], result["rate"],
            "/".join(f"{r['rate']:.0f}" for r in runs[system, backend, procs]),
            ratio(result["rate"], best[system, backend, 1]["rate"]),
            "/".join(str(d) for d in result["done"]), result["enqueue_per_s"],
            result["check"] if checks == {"ok"} else "FAILED in a round",
        ])  # fmt: skip
    table(
        ["system / backend", "procs", "wall s", "jobs/s", "each round", "vs 1 proc",
         "jobs per worker", "enqueue/s", "check: each job succeeded, claimed once"],
        rows,
    )  # fmt: skip
    note("enqueue/s: JobService.enqueue_many() by 1,000; procrastinate batch_defer() by 1,000")
    if ("procrastinate", "postgresql", 1) in best:
        for procs in PROCESS_COUNTS:
            ours = best["JobService", "postgresql", procs]["rate"]
            theirs = best["procrastinate", "postgresql", procs]["rate"]
            note(f"JobService / procrastinate on PostgreSQL, {procs} proc: {ratio(ours, theirs)}")
    elif "postgresql" in backends:
        note("procrastinate is not installed (pip install -e '.[bench]'): no peer numbers")
    describe_work_per_job(backends)


def describe_work_per_job(backends: list[str]) -> None:
    note("work per job:")
    for backend in backends:
        note(
            f"JobService/{backend}: "
            + (
                "claim() = 1 statement in autocommit (WITH claimed AS (UPDATE … WHERE seq = "
                "(SELECT … per type, ORDER BY priority DESC, run_after, seq LIMIT 1 FOR "
                "UPDATE SKIP LOCKED) RETURNING *), INSERT 'claimed' event); transition("
                "succeeded) = 1 statement in autocommit (fenced UPDATE with the "
                "unfinished-item check, INSERT event, release dependents, NOTIFY only for "
                "released ones); both prepared, through psycopg directly, taking the event "
                "order lock shared; "
                if backend == "postgresql"
                else "claim() = BEGIN IMMEDIATE, UPDATE … RETURNING, INSERT event, COMMIT; "
                "transition(succeeded) = BEGIN IMMEDIATE, fenced UPDATE … RETURNING, "
                "INSERT event, release dependents, COMMIT; "
            )
            + f"{statements_per_job(backend):.1f} SQL statements per job (BEGIN/COMMIT "
            "counted on SQLite only), no pool pre-ping; a recovery sweep at the first "
            "claim and every 5 s per process (the default)",
            indent=4,
        )
    if "postgresql" in backends and procrastinate is not None:
        note(
            "procrastinate: fetch_job = 1 statement (plpgsql: SELECT … FOR UPDATE SKIP "
            "LOCKED + UPDATE; a trigger inserts the 'started' event), await the no-op "
            "async task, finish_job = 1 statement (UPDATE; a trigger inserts 'succeeded'), "
            "each in its own transaction; no fencing token or per-job lease (stalled "
            "workers are found by heartbeat), no items, no prerequisites; "
            "concurrency=1, wait=False, listen_notify=False",
            indent=4,
        )


# ── 2. item updates ────────────────────────────────────────────────────────────
def item_keys(count: int) -> list[str]:
    return [f"photos/2024/{i:07d}.jpg" for i in range(count)]


def chunks(values: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def prepare_statistics(factory: sessionmaker[Session], backend: str, analyze: bool) -> str:
    """On PostgreSQL either ANALYZE the item table or keep autovacuum from doing so
    mid-run, so that each row shows one planner situation."""
    if backend != "postgresql":
        return "as enqueued"
    statement = "ANALYZE job_items" if analyze else (
        "ALTER TABLE job_items SET (autovacuum_enabled = off)"
    )  # fmt: skip
    with factory.begin() as session:
        session.execute(text(statement))
    return "after ANALYZE" if analyze else "no statistics yet"


def item_updates(backend: str, sizes: Sizes, *, analyze: bool = False) -> dict:
    keys = item_keys(sizes.items_total)
    with fresh_database(backend) as url, opened(url, recover_every=None) as (factory, service):
        service.enqueue("items_batched", items=keys)
        service.enqueue("items_single", items=keys)
        stats = prepare_statistics(factory, backend, analyze)
        job = service.claim(["items_batched"], "bench", lease_seconds=3600)
        token = job["fencing_token"]
        started = time.perf_counter()
        for batch in chunks(keys, sizes.item_batch):
            service.set_items(job["id"], [(k, "running") for k in batch], fencing_token=token)
            service.set_items(job["id"], [(k, "succeeded") for k in batch], fencing_token=token)
        batched_s = time.perf_counter() - started
        done = service.transition(job["id"], "succeeded", fencing_token=token)["state"]

        job = service.claim(["items_single"], "bench", lease_seconds=3600)
        token = job["fencing_token"]
        single_keys = keys[: sizes.items_single]
        started = time.perf_counter()
        for key in single_keys:
            service.set_item(job["id"], key, "running", fencing_token=token)
            service.set_item(job["id"], key, "succeeded", fencing_token=token)
        single_s = time.perf_counter() - started
        progress = service.progress(job["id"])["by_state"]
    check = done == "succeeded" and progress.get("succeeded") == len(single_keys)
    return {
        "stats": stats,
        "batched": len(keys) / batched_s,
        "single": len(single_keys) / single_s,
        "check": "ok" if check else f"FAILED: job {done}, items {progress}",
    }


def items_section(backends: list[str], sizes: Sizes) -> None:
    heading(
        f"2. item updates: running → succeeded, batched ({sizes.items_total:,} items, "
        f"set_items by {sizes.item_batch}) vs one by one ({sizes.items_single:,} of "
        f"{sizes.items_total:,} items, set_item)"
    )
    note("each item takes 2 updates (running, then succeeded), all with the fencing token")
    note(
        "PostgreSQL twice: right after enqueue (planner statistics of job_items not yet "
        "gathered: autovacuum is off for that table during the run) and after ANALYZE"
    )
    runs = [(backend, False) for backend in backends]
    if "postgresql" in backends:
        runs.append(("postgresql", True))
    rows = []
    for backend, analyze in runs:
        result = item_updates(backend, sizes, analyze=analyze)
        rows.append([
            backend, result["stats"], result["batched"], result["single"],
            ratio(result["batched"], result["single"]), result["check"],
        ])  # fmt: skip
    table(
        ["backend", "job_items statistics", "batched items/s", "one-by-one items/s",
         "batched/one", "check"],
        rows,
    )  # fmt: skip


# ── 3. claim latency ───────────────────────────────────────────────────────────
@dataclass
class LatencyCase:
    label: str
    runnable: int  # queued no-op jobs, the ones claimed
    backlog: int  # queued jobs of another type, ahead of them in claim order
    factory: Any = None
    service: Any = None
    samples: list[float] | None = None


def open_latency_case(stack: ExitStack, backend: str, case: LatencyCase) -> float:
    """Give ``case`` its own fresh database with its queue filled; returns fill seconds."""
    url = stack.enter_context(fresh_database(backend))
    case.factory, case.service = stack.enter_context(opened(url, recover_every=None))
    started = time.perf_counter()
    bulk_enqueue(case.factory, case.backlog, job_type=OTHER_JOB_TYPE)
    bulk_enqueue(case.factory, case.runnable)
    case.samples = []
    return time.perf_counter() - started


def claim_once(case: LatencyCase, record: bool) -> None:
    """Time one claim; then (untimed) complete the job and enqueue a replacement, so
    the queue keeps its size."""
    started = time.perf_counter()
    job = case.service.claim([JOB_TYPE], "bench")
    elapsed = time.perf_counter() - started
    if record:
        case.samples.append(elapsed)
    case.service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
    case.service.enqueue(JOB_TYPE)


def claim_latency(backend: str, cases: list[LatencyCase], claims: int) -> list[list[Any]]:
    """Interleave the cases claim by claim (rotating who goes first), so that noise
    from the machine hits every case alike; returns one table row per case."""
    warmup = 10
    with ExitStack() as stack:
        fills = [open_latency_case(stack, backend, case) for case in cases]
        for n in range(warmup + claims):
            for k in range(len(cases)):
                claim_once(cases[(n + k) % len(cases)], record=n >= warmup)
        rows = []
        for case, fill_s in zip(cases, fills, strict=True):
            with case.factory() as session:
                queued = session.scalar(select(func.count()).where(jobs.c.state == "queued"))
            samples = sorted(case.samples)
            median = statistics.median(samples) * 1000
            base = statistics.median(cases[0].samples) * 1000
            factor = median / base
            verdict = "" if case is cases[0] else f"{factor:.2f}x"
            if case is not cases[0]:
                verdict += " ok" if factor < LATENCY_TARGET else f" OVER {LATENCY_TARGET}x"
            rows.append([
                backend, case.label, queued, median, samples[int(len(samples) * 0.9)] * 1000,
                fill_s, verdict,
            ])  # fmt: skip
    return rows


def latency_section(backends: list[str], sizes: Sizes) -> None:
    small, large = sizes.queues
    heading(
        f"3. claim latency: {sizes.claims} claims each with {small:,} vs {large:,} queued "
        "no-op jobs (recover_every=None)"
    )
    note(
        "filler jobs are inserted in bulk with SQLAlchemy Core (the columns and 'queued' "
        "event enqueue() writes): enqueue() one by one would take minutes at 100k"
    )
    note(
        "each claim is followed (untimed) by succeeded + one new enqueue(), so the queue "
        "keeps its size; the cases run interleaved, each in its own fresh database"
    )
    note(
        f"third case: claim({JOB_TYPE!r}) while {large:,} {OTHER_JOB_TYPE!r} jobs are queued "
        "ahead (e.g. a thumbnail backlog while another worker claims other work)"
    )
    rows = []
    for backend in backends:
        cases = [
            LatencyCase(f"{small:,} {JOB_TYPE}", small, 0),
            LatencyCase(f"{large:,} {JOB_TYPE}", large, 0),
            LatencyCase(f"{small:,} {JOB_TYPE} + {large:,} {OTHER_JOB_TYPE} ahead", small, large),
        ]
        rows += claim_latency(backend, cases, sizes.claims)
    table(
        ["backend", "queue", "queued after", "median ms", "p90 ms", "bulk fill s",
         f"median vs {small // 1000}k (target < {LATENCY_TARGET}x)"],
        rows,
    )  # fmt: skip


# ── 4. enqueue_many ────────────────────────────────────────────────────────────
def enqueue_many_rate(backend: str, n_jobs: int, batch: int) -> dict:
    with fresh_database(backend) as url, opened(url, recover_every=None) as (factory, service):
        specs = [{"job_type": JOB_TYPE} for _ in range(n_jobs)]
        keyed = [
            {"job_type": JOB_TYPE, "idempotency_key": f"k{n}", "lock": f"folder-{n}",
             "items": ["a.jpg"]}
            for n in range(n_jobs)
        ]  # fmt: skip
        rates = {}
        for label, jobs_ in (("plain", specs), ("key + lock + 1 item", keyed)):
            started = time.perf_counter()
            for start in range(0, n_jobs, batch):
                service.enqueue_many(jobs_[start : start + batch])
            rates[label] = n_jobs / (time.perf_counter() - started)
        with factory() as session:
            stored = session.scalar(select(func.count()).select_from(jobs))
    rates["check"] = "ok" if stored == 2 * n_jobs else f"FAILED: {stored} jobs stored"
    return rates


def enqueue_section(backends: list[str], sizes: Sizes) -> None:
    n, batch = sizes.enqueue, 1000
    heading(f"4. enqueue_many: {n:,} jobs in batches of {batch:,} (target ≥ 10,000 jobs/s)")
    rows = []
    for backend in backends:
        result = enqueue_many_rate(backend, n, batch)
        plain = result["plain"]
        verdict = "ok" if plain >= ENQUEUE_TARGET else f"UNDER {ENQUEUE_TARGET:,}"
        rows.append([backend, plain, result["key + lock + 1 item"], verdict, result["check"]])
    table(
        ["backend", "jobs/s", "jobs/s with key, lock, 1 item", "plain vs target", "check"],
        rows,
    )


# ── 5. wake-up latency ─────────────────────────────────────────────────────────
def idle_worker(url: str, stop: Any, ready: Any, poll_seconds: float) -> None:
    """A real worker (jobs.runtime.Worker) serving no-op jobs until ``stop`` is set."""
    from photo_pipeline.jobs.handlers import HandlerRegistry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    handlers = HandlerRegistry()
    handlers.register(JOB_TYPE, lambda ctx: None)
    factory = open_database(url)
    config = WorkerConfig(
        job_types=(JOB_TYPE,), poll_seconds=poll_seconds, listen_poll_seconds=poll_seconds
    )
    worker = Worker(JobService(factory), WorkerRegistry(factory), handlers, config)
    threading.Thread(target=lambda: (stop.wait(), worker.request_stop()), daemon=True).start()
    ready.set()
    worker.run()


def wake_latencies(
    url: str, samples: int, in_process: bool, poll_seconds: float
) -> tuple[list[tuple[float, float]], list[float]]:
    """Seconds from the enqueue call, and from its return (committed), to the claim
    statement's start (the job's started_at: the server's clock, on this same
    machine), with the worker idle each time; and how long each enqueue took."""
    ctx = multiprocessing.get_context("spawn")
    stop, ready = (threading.Event(), threading.Event()) if in_process else (
        ctx.Event(), ctx.Event()
    )  # fmt: skip
    runner: Any = (threading.Thread if in_process else ctx.Process)(
        target=idle_worker, args=(url, stop, ready, poll_seconds), daemon=True
    )
    runner.start()
    ready.wait(START_TIMEOUT_S)
    latencies, enqueues = [], []
    with opened(url, recover_every=None) as (_, service):
        time.sleep(2)  # the worker is up and idle (a benchmark, not a test)
        for _ in range(samples):
            began = time.time()
            job = service.enqueue(JOB_TYPE)
            committed = time.time()
            enqueues.append(committed - began)
            deadline = time.monotonic() + 120
            while (done := service.get(job["id"]))["state"] != "succeeded":
                if time.monotonic() > deadline:
                    raise RuntimeError("the idle worker never ran the job")
                time.sleep(0.005)
            latencies.append(
                (done["started_at"].timestamp() - began, done["started_at"].timestamp() - committed)
            )
            # Idle again, for a random while: a polling worker is caught anywhere in
            # its interval, not always at the same point.
            time.sleep(random.uniform(0.05, 1.05))
    stop.set()
    runner.join(60)
    return latencies, enqueues


def wakeup_section(backends: list[str], sizes: Sizes) -> None:
    heading(
        f"5. wake-up latency: enqueue → claim by an idle worker, {sizes.wakeups} jobs one "
        "at a time (target p50 < 50 ms on PostgreSQL)"
    )
    note(
        "to the claim statement starting (started_at, the server's clock on this machine) "
        "from enqueue() being called (its own time included) and from it returning (the "
        "commit acknowledged: below 0 when the woken worker claims before the enqueuing "
        "client has read its COMMIT reply); PostgreSQL and in-process workers poll once a "
        "minute here, so only a wake-up explains a fast claim"
    )
    rows = []
    cases = [(b, False, 60.0 if b == "postgresql" else 1.0) for b in backends]
    cases.append(("sqlite", True, 60.0))
    for backend, in_process, poll in cases:
        with fresh_database(backend) as url:
            found, enqueues = wake_latencies(url, sizes.wakeups, in_process, poll)
        from_call = sorted(a for a, _ in found)
        found = sorted(b for _, b in found)
        p50 = statistics.median(from_call) * 1000
        how = (
            "in-process (embedded worker)" if in_process
            else "LISTEN/NOTIFY, worker process" if backend == "postgresql"
            else "worker process, polls every 1 s"
        )  # fmt: skip
        verdict = ""
        if backend == "postgresql":
            verdict = "ok" if p50 < WAKE_TARGET_MS else f"OVER {WAKE_TARGET_MS} ms"
        rows.append([backend, how, p50, from_call[int(len(from_call) * 0.9)] * 1000,
                     max(from_call) * 1000, statistics.median(enqueues) * 1000,
                     f"{statistics.median(found) * 1000:.2f}", verdict])  # fmt: skip
    table(
        ["backend", "wake-up", "p50 ms from call", "p90 ms", "max ms", "enqueue p50 ms",
         "p50 ms from return", "p50 (from call) vs target"],
        rows,
    )  # fmt: skip
    note(
        "SQLite across processes has no NOTIFY: a `worker` polls every --poll-seconds "
        "(1 s by default), so its latency is about half that on average"
    )


# ── main ───────────────────────────────────────────────────────────────────────
def versions() -> str:
    names = ["sqlalchemy", "psycopg", "procrastinate"]
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def postgres_version() -> str:
    engine = create_engine(PG_URL)
    with engine.connect() as conn:
        version = conn.scalar(text("SHOW server_version"))
    engine.dispose()
    return str(version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run, of {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="throughput rounds (default: by size)"
    )
    parser.add_argument(
        "--backends", default="sqlite,postgresql", help="sqlite, postgresql or both (default)"
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    if args.rounds is not None:
        sizes = replace(sizes, rounds=args.rounds)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        parser.error(f"unknown sections {unknown}; choose from {list(SECTIONS)}")
    wanted = {name.strip() for name in args.backends.split(",")}
    began = time.perf_counter()

    print(f"photo-pipeline coordinator benchmark ({'quick' if args.quick else 'full'} run)")
    print(
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"SQLAlchemy {sqlalchemy.__version__}; {versions()}"
    )
    backends = ["sqlite"] if "sqlite" in wanted else []
    error = postgres_error() if "postgresql" in wanted else "not asked for"
    if error is None:
        backends.append("postgresql")
        print(f"PostgreSQL {postgres_version()} at {make_url(PG_URL)!r}")
    else:
        print(f"PostgreSQL at {PG_URL} not measured ({error})")

    for name in only:
        SECTIONS[name](backends, sizes)
    print(f"\ndone in {time.perf_counter() - began:.0f} s")
    return 0


SECTIONS: dict[str, Callable[[list[str], Sizes], None]] = {
    "throughput": throughput_section,
    "items": items_section,
    "latency": latency_section,
    "enqueue": enqueue_section,
    "wakeup": wakeup_section,
}


if __name__ == "__main__":
    sys.exit(main())
