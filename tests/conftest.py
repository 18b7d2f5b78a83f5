"""Shared fixtures: a fresh real database per test (a SQLite file or a PostgreSQL
database, copied from one migrated once), a controllable clock, and the coordinator on
top."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from contextlib import ExitStack, closing
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

import pytest
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from tests.support.databases import (
    PG_URL,
    ScratchDatabases,
    migrated_template,
    postgres_error,
    scratch_schema,
)

# A new library gets default schedules (a nightly rescan, a weekly verify) that any
# worker of a test would tick when the suite runs across their hour: none unless a
# test asks for them (tests/integration/jobs/test_schedules*.py). Subprocesses inherit it.
os.environ.setdefault("PHOTO_PIPELINE_DEFAULT_SCHEDULES", "0")
# Likewise an import queues no faces job unless a test asks for one (tests/integration/
# faces): the import chain the other tests look at stays scan, render, similar.
os.environ.setdefault("PHOTO_PIPELINE_FACES", "off")

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


@cache
def _postgres_error() -> str | None:
    return postgres_error()


def require_postgres() -> None:
    """Skip (or, under CI=true, fail) when the test PostgreSQL is unreachable."""
    error = _postgres_error()
    if error is None:
        return
    message = f"PostgreSQL at {PG_URL} unreachable ({error})"
    if os.environ.get("CI") == "true":
        pytest.fail(message + "; CI requires it", pytrace=False)
    pytest.skip(message + "; set PHOTO_PIPELINE_TEST_DATABASE_URL")


def make_database_url(backend: str, tmp_path) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend`` and remove it afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'library.sqlite3'}"
        return
    require_postgres()
    with scratch_schema("t") as url:
        yield url


class MigratedTemplates:
    """A database of each backend migrated once per test process, copied for each test
    that needs one: running every migration took most of a short test's time (0.15 s
    on SQLite, 0.45 s on PostgreSQL, against a few milliseconds for a copy)."""

    def __init__(self, folder: Path, stack: ExitStack) -> None:
        self._folder = folder
        self._stack = stack
        self._sqlite: Path | None = None
        self._postgresql: ScratchDatabases | None = None  # copies of the template, once made
        self._postgresql_tried = False  # None then: this role may not create databases

    def database_url(self, backend: str, tmp_path: Path) -> Iterator[str]:
        """Yield the URL of a new database of ``backend`` at the head revision and
        remove it afterwards."""
        if backend == "sqlite":
            target = tmp_path / "library.sqlite3"
            template = sqlite3.connect(self._sqlite_template())
            with closing(template), closing(sqlite3.connect(target)) as copy:
                template.backup(copy)
            yield f"sqlite:///{target}"
            return
        require_postgres()
        if not self._postgresql_tried:
            self._postgresql_tried = True
            template = self._stack.enter_context(migrated_template())
            if template is not None:
                self._postgresql = ScratchDatabases(template)
                self._stack.callback(self._postgresql.close)  # before the template's drop
        if self._postgresql is None:
            yield from make_database_url(backend, tmp_path)
            return
        with self._postgresql.database() as url:
            yield url

    def _sqlite_template(self) -> Path:
        if self._sqlite is None:
            path = self._folder / "migrated.sqlite3"
            open_database(f"sqlite:///{path}").kw["bind"].dispose()
            self._sqlite = path
        return self._sqlite


@pytest.fixture(scope="session")
def migrated_templates(tmp_path_factory) -> Iterator[MigratedTemplates]:
    with ExitStack() as stack:
        yield MigratedTemplates(tmp_path_factory.mktemp("templates"), stack)


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def db_url(backend: str, tmp_path, migrated_templates: MigratedTemplates) -> Iterator[str]:
    """A database of ``backend`` at the head revision, its own for the test."""
    yield from migrated_templates.database_url(backend, tmp_path)


@pytest.fixture
def empty_db_url(backend: str, tmp_path) -> Iterator[str]:
    """A database of ``backend`` with no schema at all (for tests of the migrations)."""
    yield from make_database_url(backend, tmp_path)


@pytest.fixture
def session_factory(db_url: str) -> Iterator[sessionmaker[Session]]:
    factory = open_database(db_url)
    yield factory
    factory.kw["bind"].dispose()


class FakeClock:
    """A clock that moves only when told to."""

    def __init__(self, start: datetime | None = None) -> None:
        self.now = start or datetime(2026, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, **kwargs: float) -> datetime:
        self.now += timedelta(**kwargs)
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def service(session_factory, clock) -> JobService:
    return JobService(session_factory, clock=clock, recover_every=None)
