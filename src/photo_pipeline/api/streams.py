"""Server-sent events: live, resumable streams of the durable event log.

Each message's ``id`` is the sequence number of the last event it carries, so the
browser's automatic ``Last-Event-ID`` (or ``?after=``) resumes with no gap and no
duplicate. A job's stream ends after the job's final state event.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent

from photo_pipeline.api.auth import mint_query_token
from photo_pipeline.api.hub import FINISHED_TYPES
from photo_pipeline.api.jobs import job_exists
from photo_pipeline.api.models import AccessToken
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import ApiState, api_state
from photo_pipeline.jobs.states import FINISHED_STATES

router = APIRouter(tags=["events"], responses=PROBLEM_RESPONSES)

KEEPALIVE_SECONDS = 15
_STREAM_DOC = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "One message per event (runs of progress events merged): "
        "`id:` is the last sequence number it carries; `data:` is JSON.",
    }
}


def _cursor(after: int | None, last_event_id: str | None) -> int:
    if last_event_id is not None and last_event_id.strip():
        if not last_event_id.strip().isdigit():
            raise ApiError(422, "invalid_last_event_id", "Last-Event-ID must be a number")
        return int(last_event_id)
    return after or 0


LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", max_length=20)]
After = Annotated[int | None, Query(ge=0, le=2**62, description="Resume after this seq.")]


def _message(event: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(event, default=str), id=str(event["seq"]))


@router.get("/api/events/stream", responses=_STREAM_DOC, response_class=EventSourceResponse)
async def all_events(
    request: Request, after: After = None, last_event_id: LastEventId = None
) -> EventSourceResponse:
    """Every job's events, live. Resumes from ``Last-Event-ID`` or ``?after=``."""
    hub = api_state(request).hub
    cursor = _cursor(after, last_event_id)

    async def messages() -> AsyncIterator[ServerSentEvent]:
        async for event in hub.events(cursor):
            yield _message(event)

    return EventSourceResponse(messages(), ping=KEEPALIVE_SECONDS, send_timeout=30)


@router.get("/api/jobs/{job_id}/stream", responses=_STREAM_DOC, response_class=EventSourceResponse)
async def job_events(
    job_id: str, request: Request, after: After = None, last_event_id: LastEventId = None
) -> EventSourceResponse:
    """One job's events, live, ending after its final state (succeeded, failed or
    cancelled). Resumes from ``Last-Event-ID`` or ``?after=``."""
    state = api_state(request)
    job = await job_exists(state.library, job_id)
    cursor = _cursor(after, last_event_id)
    finished_before = job["state"] in FINISHED_STATES

    async def messages() -> AsyncIterator[ServerSentEvent]:
        if finished_before and not await _has_events_after(state, job_id, cursor):
            return
        async for event in state.hub.events(cursor, job_id):
            yield _message(event)
            if event["type"] in FINISHED_TYPES:
                return

    return EventSourceResponse(messages(), ping=KEEPALIVE_SECONDS, send_timeout=30)


async def _has_events_after(state: ApiState, job_id: str, cursor: int) -> bool:
    service = state.library.service
    return bool(await asyncio.to_thread(service.events_after, job_id, cursor, limit=1))


token_router = APIRouter(tags=["auth"], responses=PROBLEM_RESPONSES)


@token_router.get("/api/access-token", response_model=AccessToken)
def access_token(request: Request) -> AccessToken:
    """A query token (``?access_token=``) for EventSource and ``<img>`` URLs, which
    cannot send headers. It needs the bearer token: a query token cannot mint another."""
    token, expires = mint_query_token(api_state(request).auth.token)
    return AccessToken(access_token=token, expires_at=expires)
