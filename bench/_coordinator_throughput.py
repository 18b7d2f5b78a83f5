"""The coordinator benchmark's throughput (section 1): claim + complete of no-op jobs
by 1 and 4 worker processes, on JobService and on Procrastinate (the peer to beat), with
the statements each job costs."""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import time
import traceback
from collections import Counter
from collections.abc import Callable
from typing import Any

import psycopg
from sqlalchemy import event, func, select, text
from sqlalchemy.orm import Session, sessionmaker

from bench import _harness as h
from bench._coordinator_sizes import JOB_TYPE, START_TIMEOUT_S, Sizes
from bench._databases import fresh_database, fresh_pg_database, opened
from photo_pipeline.db.schema import job_events, jobs

try:
    import procrastinate
except ImportError:  # the `bench` extra is not installed
    procrastinate = None

PROCRASTINATE_DB = "pp_bench_procrastinate"  # + a suffix of its own each run
PROCESS_COUNTS = (1, 4)
RUN_TIMEOUT_S = 900


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
    h.heading(f"1. claim + complete throughput: {n:,} no-op jobs, 1 and 4 worker processes")
    h.note("wall time = from the start barrier to the last worker finding the queue empty;")
    h.note(
        f"{sizes.rounds} rounds, the order turning every round; the median round is shown, "
        "ratios are medians of each round's pair (this machine is shared)"
    )
    systems = [("JobService", b) for b in backends]
    if "postgresql" in backends and procrastinate is not None:
        systems.append(("procrastinate", "postgresql"))
    configs = [(system, backend, procs) for system, backend in systems for procs in PROCESS_COUNTS]

    def measured(config: tuple[str, str, int]) -> dict[str, Any]:
        result = measure_throughput(*config, n_jobs=n)
        return {**result, "rate": n / result["wall"]}

    runs = h.alternate({c: lambda c=c: measured(c) for c in configs}, sizes.rounds, order="rotate")
    best = {
        config: sorted(results, key=lambda r: r["rate"])[len(results) // 2]
        for config, results in runs.items()
    }  # the median round
    rows = []
    for system, backend, procs in configs:
        result = best[system, backend, procs]
        checks = {r["check"].split()[0] for r in runs[system, backend, procs]}
        rows.append([
            f"{system} / {backend}", procs, result["wall"], result["rate"],
            "/".join(f"{r['rate']:.0f}" for r in runs[system, backend, procs]),
            h.ratio(result["rate"], best[system, backend, 1]["rate"]),
            "/".join(str(d) for d in result["done"]), result["enqueue_per_s"],
            result["check"] if checks == {"ok"} else "FAILED in a round",
        ])  # fmt: skip
    h.table(
        ["system / backend", "procs", "wall s", "jobs/s", "each round", "vs 1 proc",
         "jobs per worker", "enqueue/s", "check: each job succeeded, claimed once"],
        rows,
    )  # fmt: skip
    h.note("enqueue/s: JobService.enqueue_many() by 1,000; procrastinate batch_defer() by 1,000")
    if ("procrastinate", "postgresql", 1) in best:
        for procs in PROCESS_COUNTS:
            pairs = zip(
                [r["rate"] for r in runs["JobService", "postgresql", procs]],
                [r["rate"] for r in runs["procrastinate", "postgresql", procs]],
                strict=True,
            )
            factor = h.median_ratio(pairs, name=f"JobService / procrastinate, {procs} proc")
            h.note(
                f"bare JobService API / procrastinate's worker on PostgreSQL, {procs} proc: "
                f"{factor:.2f}x (median of the rounds' pairs; the real Worker against it: "
                "section 1b)"
            )
    elif "postgresql" in backends:
        h.note("procrastinate is not installed (pip install -e '.[bench]'): no peer numbers")
    describe_work_per_job(backends)


def describe_work_per_job(backends: list[str]) -> None:
    h.note("work per job:")
    for backend in backends:
        h.note(
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
        h.note(
            "procrastinate: fetch_job = 1 statement (plpgsql: SELECT … FOR UPDATE SKIP "
            "LOCKED + UPDATE; a trigger inserts the 'started' event), await the no-op "
            "async task, finish_job = 1 statement (UPDATE; a trigger inserts 'succeeded'), "
            "each in its own transaction; no fencing token or per-job lease (stalled "
            "workers are found by heartbeat), no items, no prerequisites; "
            "concurrency=1, wait=False, listen_notify=False",
            indent=4,
        )
