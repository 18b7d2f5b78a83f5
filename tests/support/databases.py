"""The PostgreSQL that tests and benchmarks run on: its URL, whether it answers, and
scratch schemas on it (a URL whose search path names a new schema, dropped after)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

PG_URL = os.environ.get(
    "PHOTO_PIPELINE_TEST_DATABASE_URL", "postgresql+psycopg://postgres@127.0.0.1:5432/test"
)


def postgres_error(url: str = PG_URL) -> str | None:
    """None when the PostgreSQL at ``url`` answers, else why not (one line)."""
    try:
        engine = create_engine(url, connect_args={"connect_timeout": 5})
        with engine.connect() as conn:
            conn.execute(text("SELECT 1"))
        engine.dispose()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return None


@contextmanager
def scratch_schema(prefix: str, url: str = PG_URL) -> Iterator[str]:
    """Yield ``url`` with its search path on a new, empty schema named ``prefix`` and
    a random suffix; drop the schema and all in it afterwards."""
    schema = f"{prefix}_{uuid.uuid4().hex[:16]}"
    admin = create_engine(url)
    with admin.begin() as conn:
        conn.execute(text(f'CREATE SCHEMA "{schema}"'))
    scoped = make_url(url).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield scoped.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(text(f'DROP SCHEMA "{schema}" CASCADE'))
        admin.dispose()
