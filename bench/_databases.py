"""The databases the benchmarks measure on: which backends answer, a fresh SQLite file
or PostgreSQL schema per measurement (removed afterwards), a whole PostgreSQL database
for a peer that wants one (named uniquely: two runs, or a run beside the test suite on
the same server, never share one), and the coordinator opened on a URL."""

from __future__ import annotations

import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from tests.support.databases import PG_URL, postgres_error, scratch_schema

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService


def backends(wanted: str = "sqlite,postgresql") -> list[str]:
    """The backends of ``wanted`` (comma-separated) to measure: PostgreSQL only when
    it answers at ``PHOTO_PIPELINE_TEST_DATABASE_URL``; says which one is used."""
    asked = {name.strip() for name in wanted.split(",")}
    found = ["sqlite"] if "sqlite" in asked else []
    error = postgres_error() if "postgresql" in asked else "not asked for"
    if error is None:
        found.append("postgresql")
        print(f"PostgreSQL {postgres_version()} at {make_url(PG_URL)!r}")
    else:
        print(f"PostgreSQL at {make_url(PG_URL)!r} not measured ({error})")
    return found


@contextmanager
def fresh_database(backend: str, prefix: str = "bench") -> Iterator[str]:
    """Yield the URL of an empty database of ``backend``; remove it afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix=f"pp_{prefix}_") as tmp:
            yield f"sqlite:///{tmp}/library.sqlite3"
        return
    with scratch_schema(prefix) as url:
        yield url


def libpq_url(database: str) -> str:
    """PG_URL as a plain libpq URL (for psycopg / procrastinate) naming ``database``."""
    url = make_url(PG_URL).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


@contextmanager
def fresh_pg_database(prefix: str) -> Iterator[str]:
    """CREATE DATABASE ``prefix`` + a random suffix on the benchmark server, yield its
    URL, drop it (with whoever is still connected to it: it is this run's own)."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(libpq_url("postgres"), autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield libpq_url(name)
    finally:
        with psycopg.connect(libpq_url("postgres"), autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def opened(url: str, **service_kwargs: Any) -> Iterator[tuple[sessionmaker[Session], JobService]]:
    factory = open_database(url)
    try:
        yield factory, JobService(factory, **service_kwargs)
    finally:
        factory.kw["bind"].dispose()


def postgres_version() -> str:
    engine = create_engine(PG_URL)
    with engine.connect() as conn:
        version = conn.scalar(text("SHOW server_version"))
    engine.dispose()
    return str(version)
