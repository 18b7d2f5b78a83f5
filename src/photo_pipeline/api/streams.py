"""Server-sent events: live, resumable streams of the durable event log.

Each message's ``id`` is the sequence number of the last event it carries, so the
browser's automatic ``Last-Event-ID`` (or ``?after=``) resumes with no gap and no
duplicate. A job's stream ends after the job's final state event.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections import Counter
from collections.abc import AsyncGenerator
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Request
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from photo_pipeline.api.auth import DEFAULT_QUERY_PREFIX, QUERY_PREFIX_PATTERN, mint_query_token
from photo_pipeline.api.hub import FINISHED_TYPES
from photo_pipeline.api.jobs import JobId, job_exists
from photo_pipeline.api.models import AccessToken
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import ApiState, api_state
from photo_pipeline.jobs.states import FINISHED_STATES

router = APIRouter(tags=["events"], responses=PROBLEM_RESPONSES)

KEEPALIVE_SECONDS = 15
_STREAM_DOC: dict[int | str, dict[str, Any]] = {
    200: {
        "content": {"text/event-stream": {}},
        "description": "One message per event (runs of progress events merged): "
        "`id:` is the last sequence number it carries; `data:` is JSON.",
    }
}


MAX_SEQ = 2**62


def _cursor(after: int | None, last_event_id: str | None) -> int:
    """Where to resume: ``Last-Event-ID`` (an event's seq, ASCII digits) over ``?after=``."""
    if last_event_id is None or not last_event_id.strip():
        return after or 0
    text = last_event_id.strip()
    if re.fullmatch(r"[0-9]{1,19}", text) is None or int(text) > MAX_SEQ:
        raise ApiError(
            422, "invalid_last_event_id", f"Last-Event-ID must be a number from 0 to {MAX_SEQ}"
        )
    return int(text)


LastEventId = Annotated[str | None, Header(alias="Last-Event-ID", max_length=20)]
After = Annotated[int | None, Query(ge=0, le=MAX_SEQ, description="Resume after this seq.")]


def _message(event: dict[str, Any]) -> ServerSentEvent:
    return ServerSentEvent(data=json.dumps(event, default=str), id=str(event["seq"]))


class _CountedStream(EventSourceResponse):
    """A stream that holds one of its client's slots until it ends, however it ends."""

    def __init__(self, slots: Counter[str], client: str, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._slots = slots
        self._client = client

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            self._slots[self._client] -= 1
            if self._slots[self._client] <= 0:
                del self._slots[self._client]


def _stream(
    request: Request, messages: AsyncGenerator[ServerSentEvent, None]
) -> EventSourceResponse:
    """Stream ``messages``: at most ``max_streams_per_client`` at once per client
    address (429 past it), and, when opened with a query token, only until it expires."""
    state = api_state(request)
    slots: Counter[str] = request.app.state.__dict__.setdefault("_stream_slots", Counter())
    client = request.client.host if request.client else "unknown"
    if slots[client] >= state.limits.max_streams_per_client:
        raise ApiError(
            429,
            "too_many_streams",
            f"at most {state.limits.max_streams_per_client} event streams per client at once",
        )
    expires = getattr(request.state, "access_expires", None)
    if expires is not None:
        messages = _until(expires, messages)
    slots[client] += 1
    return _CountedStream(slots, client, messages, ping=KEEPALIVE_SECONDS, send_timeout=30)


async def _until(
    expires: float, messages: AsyncGenerator[ServerSentEvent, None]
) -> AsyncGenerator[ServerSentEvent, None]:
    """``messages`` until ``expires`` (Unix seconds): a stream ends with its token. The
    deadline covers only the wait for the next message, never a ``yield``."""
    deadline = asyncio.get_running_loop().time() + (expires - time.time())
    try:
        while True:
            try:
                async with asyncio.timeout_at(deadline):
                    message = await anext(messages)
            except (TimeoutError, StopAsyncIteration):
                return
            yield message
    finally:
        await messages.aclose()


@router.get("/api/events/stream", responses=_STREAM_DOC, response_class=EventSourceResponse)
async def all_events(
    request: Request, after: After = None, last_event_id: LastEventId = None
) -> EventSourceResponse:
    """Every job's events, live. Resumes from ``Last-Event-ID`` or ``?after=``."""
    hub = api_state(request).hub
    cursor = _cursor(after, last_event_id)

    async def messages() -> AsyncGenerator[ServerSentEvent, None]:
        async for event in hub.events(cursor):
            yield _message(event)

    return _stream(request, messages())


@router.get("/api/jobs/{job_id}/stream", responses=_STREAM_DOC, response_class=EventSourceResponse)
async def job_events(
    job_id: JobId, request: Request, after: After = None, last_event_id: LastEventId = None
) -> EventSourceResponse:
    """One job's events, live, ending after its final state (succeeded, failed or
    cancelled). Resumes from ``Last-Event-ID`` or ``?after=``."""
    state = api_state(request)
    job = await job_exists(state.library, job_id)
    cursor = _cursor(after, last_event_id)
    finished_before = job["state"] in FINISHED_STATES

    async def messages() -> AsyncGenerator[ServerSentEvent, None]:
        if finished_before and not await _has_events_after(state, job_id, cursor):
            return
        async for event in state.hub.events(cursor, job_id):
            yield _message(event)
            if event["type"] in FINISHED_TYPES:
                return

    return _stream(request, messages())


async def _has_events_after(state: ApiState, job_id: str, cursor: int) -> bool:
    service = state.library.service
    return bool(await asyncio.to_thread(service.events_after, job_id, cursor, limit=1))


token_router = APIRouter(tags=["auth"], responses=PROBLEM_RESPONSES)


@token_router.get("/api/access-token", response_model=AccessToken)
def access_token(
    request: Request,
    path: Annotated[
        str,
        Query(
            pattern=QUERY_PREFIX_PATTERN,
            description="The token opens only this path and those under it, e.g. "
            "/api/jobs/<id>/stream or /api/assets/ (only routes that take query tokens: "
            "event streams and renditions).",
        ),
    ] = DEFAULT_QUERY_PREFIX,
) -> AccessToken:
    """A query token (``?access_token=``) for EventSource and ``<img>`` URLs, which
    cannot send headers. It needs the bearer token: a query token cannot mint another.
    A stream opened with it ends when it expires."""
    token, expires = mint_query_token(api_state(request).auth.token, path)
    return AccessToken(access_token=token, expires_at=expires)
