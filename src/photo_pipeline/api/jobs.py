"""``/api/jobs``: start, list, inspect, cancel and retry jobs; their items and events."""

from __future__ import annotations

import asyncio
import re
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Header, Query, Request, Response
from fastapi import Path as PathParam
from pydantic import Field

from photo_pipeline.api.job_types import require_job_paths_inside_roots, start_job
from photo_pipeline.api.models import (
    JOB_ID,
    PLAIN_TEXT,
    Event,
    Item,
    ItemPage,
    Job,
    JobPage,
    JobRequest,
    item_out,
    job_out,
)
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import api_state
from photo_pipeline.jobs import ItemState, JobNotFound, JobState
from photo_pipeline.jobs.events import EventFeed
from photo_pipeline.pipeline import abandoned, job_words
from photo_pipeline.pipeline.library import Library

router = APIRouter(prefix="/api/jobs", tags=["jobs"], responses=PROBLEM_RESPONSES)

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=200,
        pattern=PLAIN_TEXT,
        description="Repeat a request safely: the same key and body return the same job.",
    ),
]


async def _job_id(job_id: Annotated[str, PathParam(description="A job's id (a UUID).")]) -> str:
    """A job id as the server makes them; anything else names no job (404), and never
    reaches the database."""
    if re.fullmatch(JOB_ID, job_id) is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id[:80]!r}")
    return job_id


JobId = Annotated[str, Depends(_job_id)]
JobTypeName = Annotated[str, Field(max_length=64, pattern=PLAIN_TEXT)]


def _job(lib: Library, job: dict[str, Any], *, with_progress: bool = True) -> Job:
    prerequisites = lib.service.prerequisites([job["id"]])[job["id"]]
    progress = lib.service.progress(job["id"]) if with_progress else None
    locks = job_words.lock_words(lib.sessions, [job["lock_key"]])
    return job_out(job, prerequisites, progress, locks.get(job["lock_key"] or ""))


def _get(lib: Library, job_id: str) -> dict[str, Any]:
    job = lib.service.get(job_id)
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {job_id!r}")
    return job


@router.post(
    "",
    status_code=201,
    response_model=Job,
    responses={200: {"model": Job, "description": "An idempotent replay: the original job."}},
)
def create_job(
    body: JobRequest, request: Request, response: Response, idempotency_key: IdempotencyKey = None
) -> Job:
    """Start a job. With ``Idempotency-Key``, repeating the request returns the same job
    (200); the same key with a different body is ``409 idempotency_conflict``. A job
    that needs a lock another job holds is ``409 lock_held`` naming that job."""
    lib = api_state(request).library
    enqueued = start_job(lib, body.type, body.params, idempotency_key)
    if not enqueued.created:
        response.status_code = 200
    api_state(request).hub.wake()
    return _job(lib, enqueued.job)


@router.get("", response_model=JobPage)
def list_jobs(
    request: Request,
    state: Annotated[list[JobState] | None, Query()] = None,
    type: Annotated[list[JobTypeName] | None, Query(max_length=20)] = None,
    cursor: Annotated[str | None, Query(pattern=JOB_ID)] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> JobPage:
    """Newest first. ``next_cursor`` pages on to older jobs."""
    lib = api_state(request).library
    last_event_seq = EventFeed(lib.sessions).last_seq()  # before the page: overlap, no gap
    page = lib.service.list_jobs(states=state, job_types=type, before=cursor, limit=limit + 1)
    more = len(page) > limit
    page = page[:limit]
    chains = lib.service.prerequisites(j["id"] for j in page)
    counts = lib.service.progress_of(j["id"] for j in page)
    locks = job_words.lock_words(lib.sessions, (j["lock_key"] for j in page))
    jobs = [
        job_out(j, chains[j["id"]], counts[j["id"]], locks.get(j["lock_key"] or "")) for j in page
    ]
    return JobPage(
        jobs=jobs, next_cursor=page[-1]["id"] if more else None, last_event_seq=last_event_seq
    )


@router.get("/{job_id}", response_model=Job)
def get_job(job_id: JobId, request: Request) -> Job:
    """State, item counts, timings and the last error."""
    lib = api_state(request).library
    return _job(lib, _get(lib, job_id))


@router.post("/{job_id}/cancel", response_model=Job)
def cancel_job(job_id: JobId, request: Request) -> Job:
    """Cancel: a queued job ends at once, a running one stops after its current items."""
    lib = api_state(request).library
    # abandoned.cancel: a job killed while it moved a file gives the file back at once.
    return _job(lib, abandoned.cancel(lib.service, job_id, reason="cancelled through the API"))


@router.post("/{job_id}/retry", response_model=Job)
def retry_job(job_id: JobId, request: Request) -> Job:
    """Queue a failed job again; its finished items are not redone. A job that acts
    on paths is retried only while they stay inside the allowed roots."""
    lib = api_state(request).library
    require_job_paths_inside_roots(lib, job_id)
    return _job(lib, lib.service.retry(job_id))


@router.get("/{job_id}/items", response_model=ItemPage)
def list_items(
    job_id: JobId,
    request: Request,
    state: Annotated[list[ItemState] | None, Query()] = None,
    cursor: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> ItemPage:
    """Items in order, optionally of some states (``?state=failed`` gives error codes),
    each with its file's name and folder and, for a failed one, what to do."""
    lib = api_state(request).library
    job_type = _get(lib, job_id)["job_type"]
    rows = lib.service.items(job_id, states=state, after_id=cursor, limit=limit + 1)
    more = len(rows) > limit
    rows = rows[:limit]
    places = job_words.item_places(lib.sessions, job_type, (r["item_key"] for r in rows))
    items: list[Item] = [
        item_out(
            r,
            places[r["item_key"]],
            job_words.advice(job_type, r["error_code"], places[r["item_key"]])
            if r["state"] == ItemState.FAILED
            else None,
        )
        for r in rows
    ]
    return ItemPage(items=items, next_cursor=rows[-1]["id"] if more else None)


@router.get("/{job_id}/events", response_model=list[Event])
def list_events(
    job_id: JobId,
    request: Request,
    after: Annotated[int, Query(ge=0, le=2**62)] = 0,
    limit: Annotated[int, Query(ge=1, le=1000)] = 500,
) -> list[dict[str, Any]]:
    """Durable events with ``seq > after``, oldest first: the polling form of the stream."""
    return api_state(request).library.service.events_after(job_id, after, limit=limit)


async def job_exists(lib: Library, job_id: str) -> dict[str, Any]:
    job = await asyncio.to_thread(lib.service.get, job_id)
    if job is None:
        raise ApiError(404, "job_not_found", f"no job with id {job_id!r}")
    return job
