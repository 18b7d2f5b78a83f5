"""The databases the benchmarks measure on: a fresh SQLite file or PostgreSQL schema
per measurement (removed afterwards), a whole PostgreSQL database for a peer that
wants one, and the coordinator opened on a URL."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker
from tests.support.databases import PG_URL, scratch_schema

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService


@contextmanager
def fresh_database(backend: str) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend``; remove it afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="pp_bench_") as tmp:
            yield f"sqlite:///{tmp}/library.sqlite3"
        return
    with scratch_schema("bench") as url:
        yield url


def libpq_url(database: str) -> str:
    """PG_URL as a plain libpq URL (for psycopg / procrastinate) naming ``database``."""
    url = make_url(PG_URL).set(drivername="postgresql", database=database)
    return url.render_as_string(hide_password=False)


@contextmanager
def fresh_pg_database(name: str) -> Iterator[str]:
    """CREATE DATABASE ``name`` on the benchmark server, yield its URL, drop it."""
    with psycopg.connect(libpq_url("postgres"), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
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
