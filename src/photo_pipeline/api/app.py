"""The FastAPI application: routes, authentication, problem answers, the event hub and
an optional embedded worker, so that one ``photo-pipeline serve`` is a working system."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import AsyncIterator, Iterator
from importlib.metadata import version

from fastapi import Depends, FastAPI, Request
from sqlalchemy import text
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from photo_pipeline import web
from photo_pipeline.api import (
    jobs,
    library,
    organize,
    problems,
    starters,  # noqa: F401  (registers the API's job types)
    streams,
)
from photo_pipeline.api.auth import TokenAuth, load_or_create_token
from photo_pipeline.api.hub import EventHub
from photo_pipeline.api.models import Health
from photo_pipeline.api.state import ApiState, api_state
from photo_pipeline.db import read_session
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.library import Library

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 1 << 20  # job requests are small; anything bigger is a mistake or abuse


def create_app(lib: Library, *, embedded_workers: int = 0) -> FastAPI:
    """The API over ``lib``. ``embedded_workers`` > 0 also runs a worker with that many
    items in parallel inside the server process."""
    auth = TokenAuth(load_or_create_token(lib.settings.home, lib.settings.api_token))
    pg = lib.sessions.kw["bind"].dialect.name == "postgresql"
    # PostgreSQL wakes the hub with NOTIFY; polling is its fallback. SQLite polls.
    hub = EventHub(lib.service, poll_seconds=2.0 if pg else 0.25)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        with _embedded_worker(lib, embedded_workers):
            yield
        await hub.stop()

    app = FastAPI(
        title="photo-pipeline",
        version=version("photo-pipeline"),
        description="Durable photo-processing jobs, live progress and the library. "
        "Every /api route but /api/health needs `Authorization: Bearer <token>`.",
        lifespan=lifespan,
    )
    app.state.api = ApiState(lib, auth, hub)
    problems.install(app)
    app.add_middleware(BodySizeLimit, limit=MAX_BODY_BYTES)
    bearer = [Depends(auth.header)]
    bearer_or_query = [Depends(auth.header_or_query)]
    app.include_router(jobs.router, dependencies=bearer)
    app.include_router(streams.router, dependencies=bearer_or_query)
    app.include_router(streams.token_router, dependencies=bearer)
    app.include_router(library.router, dependencies=bearer)
    app.include_router(library.media_router, dependencies=bearer_or_query)
    app.include_router(organize.router, dependencies=bearer)

    @app.get("/api/health", response_model=Health, tags=["health"])
    def health(request: Request) -> Health:
        """Liveness and database reachability; needs no token."""
        library = api_state(request).library
        try:
            with read_session(library.sessions) as session:
                session.execute(text("SELECT 1"))
            database = "ok"
        except Exception:
            database = "unavailable"
        status = "ok" if database == "ok" else "degraded"
        return Health(status=status, database=database, version=version("photo-pipeline"))

    web.mount(app)
    return app


@contextlib.contextmanager
def _embedded_worker(lib: Library, concurrency: int) -> Iterator[None]:
    if concurrency <= 0:
        yield
        return
    config = WorkerConfig(concurrency=concurrency, poll_seconds=0.5)
    worker = Worker(lib.service, lib.workers, registry, config)
    thread = threading.Thread(target=worker.run, name="embedded-worker", daemon=True)
    thread.start()
    log.info("embedded worker %s started (concurrency %d)", worker.id, concurrency)
    try:
        yield
    finally:
        worker.request_stop()
        thread.join(timeout=config.shutdown_seconds + 5)


class BodySizeLimit:
    """Refuse request bodies over ``limit`` bytes with 413, whether announced by
    Content-Length or streamed."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (not declared.isdigit() or int(declared) > self.limit):
            await _too_large(scope, receive, send, self.limit)
            return
        seen = 0

        async def limited() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    # FastAPI re-raises HTTPException from body reading as is.
                    raise HTTPException(413, f"request bodies are limited to {self.limit} bytes")
            return message

        await self.app(scope, limited, send)


async def _too_large(scope: Scope, receive: Receive, send: Send, limit: int) -> None:
    detail = f"request bodies are limited to {limit} bytes"
    await problems.problem(413, "request_too_large", detail)(scope, receive, send)
