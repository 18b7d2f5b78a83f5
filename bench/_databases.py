"""The databases the benchmarks measure on: a fresh SQLite file or PostgreSQL schema
per measurement (removed afterwards), a whole PostgreSQL database for a peer that
wants one, and the coordinator opened on a URL."""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService

PG_URL = os.environ.get(
    "PHOTO_PIPELINE_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_error() -> str | None:
    """None when the benchmark PostgreSQL answers, else why not."""
    try:
        engine = create_engine(PG_URL, connect_args={"connect_timeout": 5})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@contextmanager
def fresh_database(backend: str) -> Iterator[str]:
    """Yield the URL of an empty database of ``backend``; remove it afterwards."""
    if backend == "sqlite":
        with tempfile.TemporaryDirectory(prefix="pp_bench_") as tmp:
            yield f"sqlite:///{tmp}/library.sqlite3"
        return
    schema = f"bench_{uuid.uuid4().hex[:16]}"
    admin = create_engine(PG_URL)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    url = make_url(PG_URL).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()


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
