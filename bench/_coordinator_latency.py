"""The coordinator benchmark's latencies: a claim with a short vs a long queue, and
behind another job type's queue (section 3); a sleeping worker's wake-up when a job is
enqueued (section 5)."""

from __future__ import annotations

import multiprocessing
import random
import statistics
import threading
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from bench import _harness as h
from bench._coordinator_sizes import JOB_TYPE, OTHER_JOB_TYPE, START_TIMEOUT_S, Sizes
from bench._databases import fresh_database, opened
from photo_pipeline.db import open_database, write_session
from photo_pipeline.db.schema import job_events, jobs
from photo_pipeline.jobs import JobService, utc_now
from photo_pipeline.jobs.enqueue import _request_hash

LATENCY_TARGET = 1.5
WAKE_TARGET_MS = 50


# ── queued jobs, in bulk ───────────────────────────────────────────────────────
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


# ── 3. claim latency ───────────────────────────────────────────────────────────
@dataclass
class LatencyCase:
    label: str
    runnable: int  # queued no-op jobs, the ones claimed
    backlog: int  # queued jobs of another type, ahead of them in claim order
    factory: Any = None
    service: Any = None


def open_latency_case(stack: ExitStack, backend: str, case: LatencyCase) -> float:
    """Give ``case`` its own fresh database with its queue filled; returns fill seconds."""
    url = stack.enter_context(fresh_database(backend))
    case.factory, case.service = stack.enter_context(opened(url, recover_every=None))
    started = time.perf_counter()
    bulk_enqueue(case.factory, case.backlog, job_type=OTHER_JOB_TYPE)
    bulk_enqueue(case.factory, case.runnable)
    return time.perf_counter() - started


def claim_once(case: LatencyCase) -> float:
    """Time one claim; then (untimed) complete the job and enqueue a replacement, so
    the queue keeps its size."""
    started = time.perf_counter()
    job = case.service.claim([JOB_TYPE], "bench")
    elapsed = time.perf_counter() - started
    case.service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
    case.service.enqueue(JOB_TYPE)
    return elapsed


def claim_latency(backend: str, cases: list[LatencyCase], claims: int) -> list[list[Any]]:
    """Interleave the cases claim by claim (rotating who goes first), so that noise
    from the machine hits every case alike; returns one table row per case."""
    with ExitStack() as stack:
        fills = [open_latency_case(stack, backend, case) for case in cases]
        timed = {case.label: lambda c=case: claim_once(c) for case in cases}
        found = h.alternate(timed, claims, order="rotate", warmup=10)
        rows = []
        base = statistics.median(found[cases[0].label]) * 1000
        for case, fill_s in zip(cases, fills, strict=True):
            with case.factory() as session:
                queued = session.scalar(select(func.count()).where(jobs.c.state == "queued"))
            samples = sorted(found[case.label])
            median = statistics.median(samples) * 1000
            factor = median / base
            verdict = (
                "" if case is cases[0] else h.ratio(median, base, name=f"{backend}, {case.label}")
            )
            if case is not cases[0]:
                verdict += " ok" if factor < LATENCY_TARGET else f" OVER {LATENCY_TARGET}x"
            rows.append([
                backend, case.label, queued, median, samples[int(len(samples) * 0.9)] * 1000,
                fill_s, verdict,
            ])  # fmt: skip
    return rows


def latency_section(backends: list[str], sizes: Sizes) -> None:
    small, large = sizes.queues
    h.heading(
        f"3. claim latency: {sizes.claims} claims each with {small:,} vs {large:,} queued "
        "no-op jobs (recover_every=None)"
    )
    h.note(
        "filler jobs are inserted in bulk with SQLAlchemy Core (the columns and 'queued' "
        "event enqueue() writes): enqueue() one by one would take minutes at 100k"
    )
    h.note(
        "each claim is followed (untimed) by succeeded + one new enqueue(), so the queue "
        "keeps its size; the cases run interleaved, each in its own fresh database"
    )
    h.note(
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
    h.table(
        ["backend", "queue", "queued after", "median ms", "p90 ms", "bulk fill s",
         f"median vs {small // 1000}k (target < {LATENCY_TARGET}x)"],
        rows,
    )  # fmt: skip


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
    h.heading(
        f"5. wake-up latency: enqueue → claim by an idle worker, {sizes.wakeups} jobs one "
        "at a time (target p50 < 50 ms on PostgreSQL)"
    )
    h.note(
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
        how = (
            "in-process (embedded worker)" if in_process
            else "LISTEN/NOTIFY, worker process" if backend == "postgresql"
            else "worker process, polls every 1 s"
        )  # fmt: skip
        p50 = h.figure(f"{backend}, {how}: p50 ms", statistics.median(from_call) * 1000)
        verdict = ""
        if backend == "postgresql":
            verdict = "ok" if p50 < WAKE_TARGET_MS else f"OVER {WAKE_TARGET_MS} ms"
        rows.append([backend, how, p50, from_call[int(len(from_call) * 0.9)] * 1000,
                     max(from_call) * 1000, statistics.median(enqueues) * 1000,
                     f"{statistics.median(found) * 1000:.2f}", verdict])  # fmt: skip
    h.table(
        ["backend", "wake-up", "p50 ms from call", "p90 ms", "max ms", "enqueue p50 ms",
         "p50 ms from return", "p50 (from call) vs target"],
        rows,
    )  # fmt: skip
    h.note(
        "SQLite across processes has no NOTIFY: a `worker` polls every --poll-seconds "
        "(1 s by default), so its latency is about half that on average"
    )
