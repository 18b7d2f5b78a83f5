"""The worker benchmark's sizes, its pool size, and how its sections run a worker to
the end, check the job it ran, and read from the database when jobs ran."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select

from bench import _image_job as work
from photo_pipeline.db.schema import job_events, jobs
from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry

Database = tuple[Any, JobService]  # session factory, service
POOL = 2  # workers of every pool: this machine has 2 cores


@dataclass(frozen=True)
class Sizes:
    noop_items: int  # items of the no-op job
    noop_rounds: int  # in-process no-op runs per configuration
    photos: int
    photo_size: tuple[int, int]
    image_rounds: int  # interleaved rounds of every image configuration


FULL = Sizes(noop_items=20_000, noop_rounds=2, photos=120, photo_size=(3000, 2000), image_rounds=3)
QUICK = Sizes(noop_items=2_000, noop_rounds=1, photos=40, photo_size=(3000, 2000), image_rounds=1)


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


def seconds_list(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


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
