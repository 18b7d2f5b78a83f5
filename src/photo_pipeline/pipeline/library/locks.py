"""The library lock: one job that moves or judges originals at a time.

Organize, dedupe, their undos, dedupe's purge, timeshift and verify all take it:
while files move, nothing else may move them or judge them missing. A refusal is a
``LibraryBusy`` (a ``LockHeld``) naming the holders, and saying so when the worker
that held one died on this host.
"""

from __future__ import annotations

from typing import Any

from photo_pipeline.jobs import Enqueued, JobService, Joins, LockHeld
from photo_pipeline.jobs.states import WorkerState
from photo_pipeline.jobs.workers import WorkerRegistry

LIBRARY_LOCK = "library"


class LibraryBusy(LockHeld):
    """Another job holds the library lock; ``blockers`` names it (id, type, state)."""

    def __init__(self, detail: str, blockers: list[dict[str, Any]]) -> None:
        super().__init__(detail, blocking_jobs=[b["id"] for b in blockers])
        self.blockers = blockers


def enqueue_library_job(
    service: JobService,
    job_type: str,
    params: dict[str, Any],
    idempotency_key: str | None = None,
    max_attempts: int = 10,
) -> Enqueued:
    """Queue a job holding the library lock; ``LibraryBusy`` names the holders while
    another holds it."""
    try:
        return service.submit(
            job_type,
            lock=LIBRARY_LOCK,
            params=params,
            idempotency_key=idempotency_key,
            max_attempts=max_attempts,
        )
    except LockHeld as exc:
        raise library_busy(service) from exc


def enqueue_or_join(
    service: JobService,
    job_type: str,
    params: dict[str, Any],
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    *,
    joins: Joins | None = None,
) -> Enqueued:
    """Queue a library job or, while the lock is held by the active job of this very
    request (same type and params, or what ``joins`` accepts: its command was killed
    and run again), rejoin that job. Held by another: ``LibraryBusy``."""
    try:
        return service.submit_or_join(
            job_type,
            lock=LIBRARY_LOCK,
            joins=joins,
            params=params,
            idempotency_key=idempotency_key,
            max_attempts=max_attempts,
        )
    except LockHeld as exc:
        raise library_busy(service) from exc


def library_busy(service: JobService) -> LibraryBusy:
    """The ``lock_held`` refusal naming the jobs that hold the library, and saying
    so when the worker that held one died on this host."""
    holders = service.blockers(LIBRARY_LOCK)
    workers = WorkerRegistry(service.session_factory)
    workers.find_dead_on_this_host()
    dead = {w["id"] for w in workers.list(include_finished=True) if w["state"] == WorkerState.DEAD}
    named = []
    for holder in holders:
        job = service.get(holder["id"]) or {}
        owner = job.get("lease_owner")
        gone = (
            f", its worker {owner} is gone: it resumes when a worker runs (run the command "
            f"that started it again, or `photo-pipeline job wait {holder['id']}`)"
            if owner in dead
            else ""
        )
        named.append(f"{holder['job_type']} job {holder['id']} ({holder['state']}{gone})")
    return LibraryBusy(
        f"the library is busy: {', '.join(named) or 'another job'} holds it; wait for it to "
        "finish or cancel it with `photo-pipeline job cancel ID`",
        holders,
    )
