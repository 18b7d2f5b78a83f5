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

from photo_pipeline import web
from photo_pipeline.api import (
    curation,
    dedupe,
    docs,
    jobs,
    library,
    map,
    organize,
    people,
    problems,
    schedules,
    search,
    sources,
    starters,  # noqa: F401  (registers the API's job types)
    streams,
    timeline,
    uploads,
)
from photo_pipeline.api.auth import AuthenticateFirst, TokenAuth, load_or_create_token
from photo_pipeline.api.bodies import MAX_BODY_BYTES, BodyLimits
from photo_pipeline.api.headers import SecurityHeaders
from photo_pipeline.api.hub import EventHub
from photo_pipeline.api.models import Health, Watcher
from photo_pipeline.api.ratelimit import FailedAuthLimiter
from photo_pipeline.api.server import ConnectionLimits
from photo_pipeline.api.state import ApiState, api_state
from photo_pipeline.db import read_session
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import DEFAULT_JOBS, Worker, WorkerConfig
from photo_pipeline.pipeline import job_types  # noqa: F401  (the embedded worker runs them)
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.uploads.service import Sweeper, Uploads
from photo_pipeline.pipeline.uploads.settings import UploadSettings
from photo_pipeline.pipeline.watch.leases import active_watchers

log = logging.getLogger(__name__)


def create_app(
    lib: Library,
    *,
    embedded_workers: int = 0,
    memory_budget: int | None = None,
    limits: ConnectionLimits | None = None,
    watch: bool = False,
    upload_settings: UploadSettings | None = None,
) -> FastAPI:
    """The API over ``lib``. ``embedded_workers`` > 0 also runs a worker with that many
    items in parallel inside the server process (``memory_budget``: its
    ``WorkerConfig.memory_budget``). ``limits``: body deadline and stream caps (the
    connection ones are the HTTP server's, see :mod:`.server`). ``watch``: run the
    watchers of the watched sources (``pipeline.watch``) while it serves.
    ``upload_settings``: where uploads land and their limits (default: from the
    environment); the server sweeps expired partial uploads while it runs."""
    limits = limits or ConnectionLimits()
    upload_service = Uploads(lib, upload_settings or UploadSettings.from_env(lib.settings))
    sweeper = Sweeper(upload_service)
    auth = TokenAuth(load_or_create_token(lib.settings.home, lib.settings.api_token))
    # PostgreSQL wakes the hub with NOTIFY, except for a worker's claims and successes
    # (jobs.hot_path), which it polls for, as it does everything on SQLite.
    hub = EventHub(lib.service, poll_seconds=0.25)

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        await hub.start()
        sweeper.start()
        try:
            with (
                _embedded_worker(lib, embedded_workers, memory_budget) as worker,
                _watchers(lib, watch),
            ):
                app.state.embedded_worker = worker
                yield
        finally:  # also when the worker's stop raised: no reader left behind
            sweeper.stop()
            await hub.stop()

    app = FastAPI(
        title="photo-pipeline",
        version=version("photo-pipeline"),
        description="Durable photo-processing jobs, live progress and the library. "
        "Every /api route but /api/health needs `Authorization: Bearer <token>`.",
        lifespan=lifespan,
        docs_url=None,  # docs.mount serves /docs from local assets; no CDN
        redoc_url=None,
        swagger_ui_oauth2_redirect_url=None,
        # Starlette's slash redirects build their Location from the request's Host
        # header (a spoofed host in a cached or shared link): a path is exact, else 404.
        redirect_slashes=False,
    )
    app.state.api = ApiState(lib, auth, hub, limits)
    problems.install(app)
    uploads.install(app, upload_service)
    # Outermost last: headers on every answer; then the last-resort 500; then
    # authentication, before anything reads a body; then the body's limits.
    app.add_middleware(
        BodyLimits,
        limit=MAX_BODY_BYTES,
        read_timeout=limits.body_timeout,
        own_limits=(uploads.PREFIX,),  # a tus POST or PATCH checks its own length
    )
    limiter = FailedAuthLimiter(limits.failed_auth_burst, limits.failed_auth_per_second)
    app.add_middleware(AuthenticateFirst, auth=auth, limiter=limiter)
    app.add_middleware(problems.InternalErrors)
    app.add_middleware(SecurityHeaders)
    bearer = [Depends(auth.header)]
    bearer_or_query = [Depends(auth.header_or_query)]
    app.include_router(jobs.router, dependencies=bearer)
    app.include_router(streams.router, dependencies=bearer_or_query)
    app.include_router(streams.token_router, dependencies=bearer)
    app.include_router(library.router, dependencies=bearer)
    app.include_router(curation.router, dependencies=bearer)  # before media's /{kind}
    app.include_router(people.router, dependencies=bearer)  # before media's /{kind}
    app.include_router(people.crop_router, dependencies=bearer_or_query)
    app.include_router(library.media_router, dependencies=bearer_or_query)
    app.include_router(map.router, dependencies=bearer)
    app.include_router(organize.router, dependencies=bearer)
    app.include_router(sources.router, dependencies=bearer)
    app.include_router(dedupe.router, dependencies=bearer)
    app.include_router(schedules.router, dependencies=bearer)
    app.include_router(uploads.router, dependencies=bearer)
    app.include_router(search.router, dependencies=bearer)
    app.include_router(timeline.router, dependencies=bearer)

    @app.get("/api/health", response_model=Health, tags=["health"])
    def health(request: Request) -> Health:
        """Liveness, database reachability and the embedded worker; needs no token.
        ``degraded`` when the database does not answer or the worker thread died."""
        library = api_state(request).library
        try:
            with read_session(library.sessions) as session:
                session.execute(text("SELECT 1"))
            database = "ok"
        except Exception:
            database = "unavailable"
        thread: threading.Thread | None = getattr(request.app.state, "embedded_worker", None)
        worker = "none" if thread is None else "ok" if thread.is_alive() else "dead"
        status = "ok" if database == "ok" and worker != "dead" else "degraded"
        watchers: list[Watcher] = []
        if database == "ok":
            with contextlib.suppress(Exception):  # the database went away meanwhile
                watchers = [Watcher(**row) for row in active_watchers(library.sessions)]
        return Health(
            status=status,
            database=database,
            worker=worker,
            version=version("photo-pipeline"),
            watchers=watchers,
        )

    docs.mount(app)
    web.mount(app)
    return app


@contextlib.contextmanager
def _watchers(lib: Library, watch: bool) -> Iterator[None]:
    """The watchers of the watched sources, on a thread of the server (``watch``)."""
    if not watch:
        yield
        return
    from photo_pipeline.pipeline.watch.service import WatchService

    service = WatchService(lib)
    service.start()
    try:
        yield
    finally:
        service.stop()  # gives the leases back: another process takes them at once


@contextlib.contextmanager
def _embedded_worker(
    lib: Library, concurrency: int, memory_budget: int | None
) -> Iterator[threading.Thread | None]:
    """Run a worker on a thread of the server; yields the thread (None: no worker),
    whose death /api/health reports."""
    if concurrency <= 0:
        yield None
        return
    config = WorkerConfig(
        concurrency=concurrency, jobs=DEFAULT_JOBS, poll_seconds=0.5, memory_budget=memory_budget
    )
    worker = Worker(lib.service, lib.workers, registry, config)

    def run() -> None:
        try:
            worker.run()
        except Exception:
            # Logged once here; the thread ends and /api/health reports it dead.
            log.exception("embedded worker %s died", worker.id)

    thread = threading.Thread(target=run, name="embedded-worker", daemon=True)
    thread.start()
    log.info("embedded worker %s started (concurrency %d)", worker.id, concurrency)
    try:
        yield thread
    finally:
        worker.request_stop()
        thread.join(timeout=config.shutdown_seconds + 5)
