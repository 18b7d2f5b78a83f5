"""Shared fixtures: a fresh real database per test (a SQLite file or a PostgreSQL
schema), a controllable clock, and the coordinator on top."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import cache

import pytest
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from tests.support.databases import PG_URL, postgres_error, scratch_schema

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


@pytest.fixture(params=BACKENDS)
def backend(request) -> str:
    return request.param


@pytest.fixture
def db_url(backend: str, tmp_path) -> Iterator[str]:
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
