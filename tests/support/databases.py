"""The PostgreSQL that tests and benchmarks run on: its URL, whether it answers,
scratch schemas on it (a URL whose search path names a new schema, dropped after), and
scratch databases copied from a template migrated once (``migrated_template``), one
made ahead while a test runs (``ScratchDatabases``)."""

from __future__ import annotations

import contextlib
import os
import uuid
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ProgrammingError

from photo_pipeline.db import open_database

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


@contextmanager
def migrated_template(url: str = PG_URL) -> Iterator[str | None]:
    """Yield the name of a new database migrated to the head revision, to copy test
    databases from (:class:`ScratchDatabases`), or None when this role may not create
    databases; drop it afterwards."""
    name = f"pp_template_{uuid.uuid4().hex[:12]}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        try:
            with admin.connect() as conn:
                conn.execute(text(f'CREATE DATABASE "{name}"'))
        except ProgrammingError:  # no CREATEDB: each test migrates a schema of its own
            yield None
            return
        try:
            migrated = open_database(_on(url, name))
            migrated.kw["bind"].dispose()  # a template must have no session connected
            yield name
        finally:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


class ScratchDatabases:
    """Databases copied from ``template``, made ahead and dropped behind on a thread of
    their own: a test waits neither for the next one's ``CREATE DATABASE`` nor for its
    own's ``DROP DATABASE``, whose forced checkpoint flushes the whole server (0.3 to
    3 s each on a busy machine, most of a short test's time). Each test still gets a
    database no test used; :meth:`close` drops what is left."""

    def __init__(self, template: str, url: str = PG_URL) -> None:
        self._template = template
        self._url = url
        self._admin = create_engine(url, isolation_level="AUTOCOMMIT")
        # A thread each: a test waits for the next database's copy, never behind the
        # drop of the last one (whose checkpoint may take seconds under load).
        self._creating = ThreadPoolExecutor(max_workers=1, thread_name_prefix="scratch-db")
        self._dropping = ThreadPoolExecutor(max_workers=1, thread_name_prefix="drop-db")
        self._ahead: Future[str] = self._creating.submit(self._create)

    @contextmanager
    def database(self) -> Iterator[str]:
        """Yield the URL of a new database copied from the template; drop it after."""
        name = self._ahead.result()
        self._ahead = self._creating.submit(self._create)
        try:
            yield _on(self._url, name)
        finally:
            self._dropping.submit(self._drop, name)

    def close(self) -> None:
        """Drop the database made ahead and wait for every drop."""
        with contextlib.suppress(Exception):  # the server went away: nothing to drop
            self._drop(self._ahead.result())
        self._creating.shutdown(wait=True)
        self._dropping.shutdown(wait=True)
        self._admin.dispose()

    def _create(self) -> str:
        name = f"t_{uuid.uuid4().hex[:16]}"
        with self._admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE "{self._template}"'))
        return name

    def _drop(self, name: str) -> None:
        with self._admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


def _on(url: str, database: str) -> str:
    return make_url(url).set(database=database).render_as_string(hide_password=False)
