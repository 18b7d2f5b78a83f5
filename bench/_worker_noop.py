"""The worker benchmark's no-op items (section 1): the runtime's overhead per item
against a bare loop, in process and with ``photo-pipeline worker`` processes (1b)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import (
    FIRST_COMPLETED,
    ThreadPoolExecutor,
    wait,
)
from dataclasses import dataclass
from typing import Any

from sqlalchemy import text, update

from bench import _harness as h
from bench import _image_job as work
from bench._databases import fresh_database, opened
from bench._worker_common import (
    POOL,
    Sizes,
    check_job,
    job_window,
    run_worker,
    seconds_list,
    worker_config,
)
from photo_pipeline.db.schema import job_items
from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.workers import WorkerRegistry

GATE_JOB = "bench.gate"
OTHER_JOB = "bench.other"  # served by no worker here
PROCESS_TIMEOUT_S = 600


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
    h.heading(
        f"1a. coordination per item: one job of {n:,} no-op items, in-process Worker.run() "
        "(burst, batch_size 50, thread executor)"
    )
    h.note("every microsecond is coordination: the item function returns at once")
    h.note(
        f"small job: the same with {small:,} items, once (a cost per item that grows with "
        "the job's size means a query that reads all the job's items every batch)"
    )
    h.note(
        "PostgreSQL statistics of job_items: ANALYZE right after the enqueue (the best "
        "case), none yet (a new library), or only of an earlier job (a library in use: a "
        "new job's id is never in the statistics until autovacuum analyzes again)"
    )
    cases = noop_cases(backends)
    slow = {case for case in cases if case.backend == "postgresql"}  # so once
    runs = h.alternate({c: lambda c=c: noop_run(c, n) for c in cases}, sizes.noop_rounds, once=slow)
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
            bare[case.concurrency] / n * 1e6, h.ratio(best["wall"], base), small_per_item,
            h.ratio(per_item, small_per_item), "ok" if checks == {"ok"} else " ".join(checks),
        ])  # fmt: skip
    h.table(
        ["worker", "job_items statistics", "wall s", "each round s", "items/s", "µs/item",
         "bare µs/item", "vs sqlite c1", f"µs/item, {small:,} items", "growth", "check"],
        rows,
    )  # fmt: skip
    h.note(
        "bare µs/item: the same calls with no coordinator (concurrency 1: a plain loop; 2: "
        "a ThreadPoolExecutor(2) with at most 4 in flight, as JobContext.map does)"
    )
    return {
        b: n / min(r["wall"] for c in cases if c.backend == b for r in runs[c]) for b in backends
    }


# ── 1b. worker processes ───────────────────────────────────────────────────────
def cli_env(url: str, home: str) -> dict[str, str]:
    return h.child_env(PHOTO_PIPELINE_DATABASE_URL=url, PHOTO_PIPELINE_HOME=home)


def start_cli_workers(url: str, home: str, count: int) -> list[subprocess.Popen[bytes]]:
    command = [
        sys.executable, "-m", "photo_pipeline", "worker", "--burst", "--import", "bench._image_job",
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


def processes_section(backends: list[str], sizes: Sizes, in_process: dict[str, float]) -> None:
    n = sizes.noop_items
    h.heading(f"1b. {n:,} no-op items over 1 and {POOL} `photo-pipeline worker --burst` processes")
    h.note(
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
                h.ratio(rate, one), h.ratio(rate, in_process[backend]), result["check"],
            ])  # fmt: skip
    h.table(
        ["backend", "processes", "workers that claimed", "start-up s", "run s", "items/s",
         "vs 1 process", "vs best in-process", "check"],
        rows,
    )  # fmt: skip
    h.note(f"this machine has {os.cpu_count()} cores, shared with the database server")
