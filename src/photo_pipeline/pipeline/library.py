"""A library opened for use: its settings, database, coordinator and worker registry.
The CLI, the HTTP API and the web UI all start from one of these."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.config import Settings
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService, RetryPolicy
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.catalog import Catalog


@dataclass(frozen=True)
class Library:
    settings: Settings
    sessions: sessionmaker[Session]
    service: JobService
    workers: WorkerRegistry

    @property
    def catalog(self) -> Catalog:
        return Catalog(self.sessions)

    def close(self) -> None:
        self.sessions.kw["bind"].dispose()


def open_library(settings: Settings) -> Library:
    """Open (creating or upgrading) the library's database."""
    factory = open_database(settings.database_url)
    policy = RetryPolicy(settings.retry_base_seconds, settings.retry_max_seconds)
    return Library(
        settings, factory, JobService(factory, retry_policy=policy), WorkerRegistry(factory)
    )
