"""Waiting for jobs with live progress bars, running them in-process if nobody else
will (embedded mode); and finding a job by a start of its id. The worker runtime and
the progress bars load where a wait starts, not for `job show`."""

from __future__ import annotations

import os
import random
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

from photo_pipeline.cli.common import console, err_console
from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs.errors import InvalidArgument, JobError, JobNotFound
from photo_pipeline.jobs.service import JobService, utc_now
from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.pipeline.library import Library

if TYPE_CHECKING:
    from photo_pipeline.jobs.runtime import Worker

T = TypeVar("T")

REFRESH_SECONDS = 0.25
# A worker that has not heartbeaten for this long is not counted on to do the work.
LIVE_WORKER_HEARTBEAT = timedelta(seconds=60)
# How many candidates an ambiguous id prefix lists.
AMBIGUOUS_SHOWN = 10


def _run_reporting(worker: Worker, failure: list[BaseException]) -> None:
    try:
        worker.run()
    except BaseException as exc:
        failure.append(exc)


def _needs_embedded_worker(lib: Library, job_types: set[str]) -> bool:
    """True unless live workers serve every one of ``job_types``. Live: registered,
    not found dead on this host, and heartbeating recently."""
    lib.workers.find_dead_on_this_host()
    recent = utc_now() - LIVE_WORKER_HEARTBEAT
    served = {
        job_type
        for worker in lib.workers.list()
        if worker["heartbeat_at"] >= recent
        for job_type in worker["job_types"]
    }
    return not job_types <= served


def existing_job(service: JobService, job_id: str) -> dict[str, Any]:
    """The job's snapshot, by its id or any unique start of it (``9055b549``);
    ``job_not_found`` if there is none (never created, or pruned meanwhile),
    ``ambiguous_job_id`` with the candidates if the start fits several."""
    job = service.get(full_job_id(service, job_id))
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return job


def full_job_id(service: JobService, job_id: str) -> str:
    """The id that ``job_id`` starts, when it starts exactly one (else ``job_id`` as
    given, for the caller to report); ``ambiguous_job_id`` when it starts several."""
    if not job_id or service.get(job_id) is not None:
        return job_id
    candidates = service.ids_starting_with(job_id, limit=AMBIGUOUS_SHOWN + 1)
    if len(candidates) > 1:
        shown = ", ".join(candidates[:AMBIGUOUS_SHOWN])
        more = ", …" if len(candidates) > AMBIGUOUS_SHOWN else ""
        raise InvalidArgument(
            "ambiguous_job_id", f"{job_id!r} starts several job ids: {shown}{more}"
        )
    return candidates[0] if candidates else job_id


def wait_for_jobs(
    lib: Library, job_ids: list[str], *, embedded: bool | None, show_progress: bool
) -> list[dict[str, Any]]:
    """Block until every job is finished; return their final snapshots. Database
    outages meanwhile are waited out: the jobs are queued, so nothing is lost."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TaskProgressColumn,
        TextColumn,
        TimeRemainingColumn,
    )

    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig

    service = lib.service
    types = ride_out(lambda: {existing_job(service, job_id)["job_type"] for job_id in job_ids})
    if embedded is None:
        embedded = ride_out(lambda: _needs_embedded_worker(lib, types))
    worker = None
    if embedded:
        import photo_pipeline.pipeline.job_types  # noqa: F401  (runs them here: registers them)

        unknown = sorted(t for t in types if t not in registry)
        if unknown:
            raise JobError(
                "no_handler",
                f"this process has no handler for {', '.join(unknown)}: start "
                "`photo-pipeline worker` with the module that provides it",
            )
        # Not burst: a job waiting out a retry backoff must still be run; the wait
        # below stops the worker once every job is finished.
        config = WorkerConfig(concurrency=os.cpu_count() or 1, poll_seconds=0.2)
        worker = Worker(service, lib.workers, registry, config)
        failure: list[BaseException] = []
        thread = threading.Thread(
            target=_run_reporting, args=(worker, failure), name="embedded-worker", daemon=True
        )
        thread.start()
    try:
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TaskProgressColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeRemainingColumn(),
            console=console,
            disable=not show_progress,
        ) as bars:
            tasks = {job_id: bars.add_task(job_id[:8], total=None, rate="") for job_id in job_ids}
            outage = _Outage()
            while True:
                try:
                    finals = [existing_job(service, job_id) for job_id in job_ids]
                    progress_of = service.progress_of(job_ids)
                except DatabaseUnavailable as exc:
                    outage.wait(exc)
                    continue
                outage.over()
                for job in finals:
                    progress = progress_of[job["id"]]
                    task = tasks[job["id"]]
                    speed = bars.tasks[task].speed
                    bars.update(
                        task,
                        total=progress["total"] or None,
                        completed=progress["done"],
                        description=f"{job['job_type']} [{job['state']}]",
                        rate=f"{speed:.1f} items/s" if speed else "",
                    )
                if all(job["state"] in FINISHED_STATES for job in finals):
                    return finals
                if worker is not None and failure:
                    raise failure[0]
                time.sleep(REFRESH_SECONDS)  # display refresh, not synchronisation
    finally:
        if worker is not None:
            worker.request_stop()
            thread.join()


def ride_out(action: Callable[[], T]) -> T:
    """``action()``, tried again while the database is unavailable."""
    outage = _Outage()
    while True:
        try:
            result = action()
        except DatabaseUnavailable as exc:
            outage.wait(exc)
            continue
        outage.over()
        return result


class _Outage:
    """The database going away while we wait: one line when it goes, one when it
    comes back, and polls spaced by a capped, jittered backoff meanwhile."""

    def __init__(self, sleep: Callable[[float], None] = time.sleep) -> None:
        self._sleep = sleep
        self._rng = random.Random()
        self._attempt = 0
        self._since = 0.0

    def wait(self, exc: DatabaseUnavailable) -> None:
        if self._attempt == 0:
            self._since = time.monotonic()
            err_console.print(
                f"database unavailable, still waiting: {exc.detail}",
                highlight=False,
                soft_wrap=True,
            )
        from photo_pipeline.jobs.runtime import RECONNECT

        self._attempt += 1
        self._sleep(RECONNECT.delay(self._attempt, self._rng).total_seconds())

    def over(self) -> None:
        if self._attempt:
            err_console.print(
                f"database reachable again after {time.monotonic() - self._since:.1f} s",
                highlight=False,
            )
        self._attempt = 0
