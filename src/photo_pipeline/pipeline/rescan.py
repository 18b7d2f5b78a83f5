"""The ``rescan`` job: import every registered source again — its scan, then render
and similar — as ``photo-pipeline import`` of each would, so that files added,
changed or deleted since are noticed. The nightly default schedule queues it
(``pipeline.scheduled``).

Items are sources (their ids). A source whose scan is already queued or running
joins it; one that cannot be scanned now (an unplugged disk: ``not_a_folder``, a
folder outside the allowed roots) fails its item and the others go on. Each source's
chain is queued under a key of this job and the source, so a rescan that runs again
after a crash queues nothing twice.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.config import Settings
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import Enqueued, JobService
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.pipeline.ingest.imports import start_import
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.watch.leases import active_watchers

JOB_TYPE = "rescan"
LOCK = "rescan"  # one rescan at a time


def sources_to_rescan(session_factory: sessionmaker[Session]) -> dict[int, str]:
    """The sources a rescan imports again, id -> folder: every registered one but
    those a live watcher keeps current (pipeline.watch). A watched source whose
    watcher is not running (no `serve` or `watch` up) is rescanned like any other."""
    watched = {row["source_id"] for row in active_watchers(session_factory)}
    with read_session(session_factory) as session:
        found = session.execute(select(sources.c.id, sources.c.path).order_by(sources.c.id))
        return {source_id: path for source_id, path in found if source_id not in watched}


def start_rescan(service: JobService, *, idempotency_key: str | None = None) -> Enqueued:
    """Queue a rescan (``lock_held`` while another one is active)."""
    return service.submit(JOB_TYPE, lock=LOCK, idempotency_key=idempotency_key)


@registry.handler(JOB_TYPE)
def rescan(ctx: JobContext) -> None:
    chosen = sources_to_rescan(ctx.session_factory)
    ctx.add_items([str(source_id) for source_id in chosen])
    settings = Settings.from_env()  # the worker's: the library's home and render settings
    service = JobService(ctx.session_factory)
    catalog = Catalog(ctx.session_factory)
    for key in ctx.items():
        folder = chosen.get(int(key))
        if folder is None:
            ctx.succeed(key)  # removed since: nothing to scan
            continue
        try:
            start_import(
                service,
                catalog,
                [Path(folder)],
                settings,
                idempotency_key=f"{JOB_TYPE}:{ctx.job_id}:{key}",
                roots=settings.allowed_roots,
            )
        except PhotoPipelineError as exc:
            ctx.fail(key, exc.code, exc.detail)
            continue
        ctx.succeed(key)
