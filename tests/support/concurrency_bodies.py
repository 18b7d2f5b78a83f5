"""Process bodies for the multi-process tests (importable by spawned children).

Each opens its own engine, waits at the barrier so that all act at once, and reports
(results, errors) through the queue; an unexpected exception is reported, not lost.
"""

from __future__ import annotations

import traceback
from typing import Any

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobError, JobService


def _run(url: str, barrier: Any, results: Any, body: Any) -> None:
    try:
        factory = open_database(url)
        service = JobService(factory)
        barrier.wait(timeout=120)
        results.put(("ok", body(service)))
        factory.kw["bind"].dispose()
    except Exception:
        results.put(("error", traceback.format_exc()))


def claim_until_empty(url: str, barrier: Any, results: Any, worker_id: str) -> None:
    def body(service: JobService) -> list[str]:
        claimed = []
        while (job := service.claim(["noop"], worker_id)) is not None:
            service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
            claimed.append(job["id"])
        return claimed

    _run(url, barrier, results, body)


def claim_many_until_empty(url: str, barrier: Any, results: Any, worker_id: str) -> None:
    """``claim_until_empty`` by batches of up to 7 jobs a claim."""

    def body(service: JobService) -> list[str]:
        claimed: list[str] = []
        while batch := service.claim_many(["noop"], worker_id, limit=7):
            for job in batch:
                service.transition(job["id"], "succeeded", fencing_token=job["fencing_token"])
                claimed.append(job["id"])
        return claimed

    _run(url, barrier, results, body)


def enqueue_once(url: str, barrier: Any, results: Any, kwargs: dict[str, Any]) -> None:
    def body(service: JobService) -> str:
        try:
            return "job:" + service.enqueue("organize", **kwargs)["id"]
        except JobError as exc:
            return "refused:" + exc.code

    _run(url, barrier, results, body)


def open_only(url: str, barrier: Any, results: Any) -> None:
    _run(url, barrier, results, lambda service: "opened")
