"""Engines and sessions: SQLite in WAL mode with immediate write transactions, or
PostgreSQL through psycopg 3."""

from __future__ import annotations

import os
import select
import sqlite3
import stat
import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

from sqlalchemy import CursorResult, Engine, UpdateBase, create_engine, event
from sqlalchemy.engine import ExceptionContext, make_url
from sqlalchemy.exc import DisconnectionError
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.errors import read_only_write, stalled_writer, unreachable
from photo_pipeline.write_gate import WRITES

# Writers wait this long for SQLite's write lock before giving up (DatabaseLocked,
# naming the process that holds it).
SQLITE_BUSY_TIMEOUT_MS = 60_000
# PostgreSQL ends a write transaction that sits idle this long. Every write here runs
# its statements back to back (milliseconds); one idle for seconds belongs to a client
# that froze or was cut off mid-transaction, and its row locks would keep every other
# worker from recovering its job (SKIP LOCKED).
PG_IDLE_IN_TRANSACTION_MS = 20_000
# libpq's connection settings unless the URL sets them. A database host that went
# away without a word (powered off, cut off by a partition, its address moved to a
# failover) sends no reset, and by default a client waits for its answer or its
# connection for ever (keepalives start after two hours). With these the kernel gives
# up within about 15 s of silence (5 s idle, then 3 unanswered probes 3 s apart), of
# unacknowledged data, or of an unanswered connect: the caller sees
# DatabaseUnavailable and retries, as after a restart. A busy server still answers:
# its kernel acknowledges the probes.
PG_CONNECTION_DEFAULTS = {
    "connect_timeout": "10",
    "keepalives": "1",
    "keepalives_idle": "5",
    "keepalives_interval": "3",
    "keepalives_count": "3",
    "tcp_user_timeout": "15000",
}
# Session execution option naming a write transaction (BEGIN IMMEDIATE on SQLite).
_WRITE = "photo_pipeline_write"


def create_database_engine(url: str, **kwargs: Any) -> Engine:
    """Create an engine for ``url`` with the per-backend settings the job system needs."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        engine = _sqlite_engine(url, **kwargs)
    elif parsed.get_backend_name() == "postgresql":
        if parsed.drivername == "postgresql":
            parsed = parsed.set(drivername="postgresql+psycopg")
        # In the URL, so that the LISTEN connections made from it get them too.
        parsed = parsed.update_query_dict(
            {k: v for k, v in PG_CONNECTION_DEFAULTS.items() if k not in parsed.query}
        )
        engine = _postgres_engine(create_engine(parsed, **kwargs))
    else:
        raise ValueError(f"unsupported database URL {url!r}: use sqlite:/// or postgresql://")
    # A refused or broken connection becomes DatabaseUnavailable wherever it happens.
    event.listen(engine, "handle_error", unreachable)
    return engine


def _sqlite_engine(url: str, **kwargs: Any) -> Engine:
    parsed = make_url(url)
    on_disk = bool(parsed.database) and parsed.database != ":memory:"
    read_only = on_disk and read_only_database(Path(str(parsed.database)))
    if on_disk and not read_only:
        _make_database_files_private(Path(str(parsed.database)))
    if read_only:
        kwargs = {**kwargs, "creator": _read_only_connect(Path(str(parsed.database)))}
    engine = create_engine(url, connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}, **kwargs)
    if on_disk:
        database = Path(str(parsed.database))

        @event.listens_for(engine, "handle_error")
        def _on_error(context: ExceptionContext) -> None:
            # A writer that gave up waiting names who holds the lock (a stopped worker?).
            stalled_writer(context, database)
            read_only_write(context, database)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Take transaction control away from the sqlite3 module so that we emit BEGIN.
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode survives a killed process; only power loss may drop the
        # last commits.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A deferred transaction that later writes cannot wait for the lock (SQLite
        # returns "database is locked" at once to avoid deadlock), so every write
        # transaction takes the write lock up front and waits in busy_timeout.
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")

    return engine


def read_only_database(database: Path) -> bool:
    """Whether this process may only read the SQLite database at ``database``: it exists
    and the file, or the folder where SQLite keeps its -wal and -shm files, is not
    writable (a read-only mount, a backup's permissions, ``chattr +i``)."""
    if not database.exists():
        return False
    writable = os.access(database, os.W_OK) and os.access(database.parent, os.W_OK)
    return not writable


def _read_only_connect(database: Path) -> Any:
    """Connections that only read (``mode=ro``). A database without a -wal file has
    nothing beyond its main file, and no -shm file can be made beside it: opened
    ``immutable``, as SQLite reads a database on read-only media. Commands that read
    work; a write fails as "attempt to write a readonly database"."""
    query = "mode=ro"
    if not os.path.exists(f"{database}-wal"):
        query += "&immutable=1"
    uri = f"file:{urllib.parse.quote(str(database.resolve()))}?{query}"

    def connect() -> sqlite3.Connection:
        return sqlite3.connect(
            uri, uri=True, timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False
        )

    return connect


def _make_database_files_private(database: Path) -> None:
    """Create the database file owner-only before SQLite first opens it, and narrow an
    older one and its journals: SQLite gives the -wal and -shm files the database
    file's mode, and they hold every path and GPS position. Modes are only narrowed,
    so a stricter umask's stays."""
    database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        os.close(os.open(database, flags, 0o600))
    except FileExistsError:
        pass  # narrowed below
    for suffix in ("", "-wal", "-shm", "-journal"):
        path = f"{database}{suffix}"
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            continue
        if mode & 0o177:
            os.chmod(path, mode & 0o600)


def _postgres_engine(engine: Engine) -> Engine:
    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        # A client frozen or cut off inside a write transaction (SIGSTOP, a paused VM,
        # a partition) would hold its row locks for ever; the server ends such a
        # transaction instead. Only write transactions: a read may idle on purpose
        # (a listing streamed to a slow reader) and holds no lock anyone waits for.
        if connection.get_execution_options().get(_WRITE, False):
            connection.exec_driver_sql(
                f"SET LOCAL idle_in_transaction_session_timeout = {PG_IDLE_IN_TRANSACTION_MS}"
            )

    @event.listens_for(engine, "checkout")
    def _on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        # Instead of a pre-ping (a round trip per checkout): a server that ended an
        # idle connection (restart, termination, idle timeout) has left its goodbye
        # or EOF on the socket, seen without a round trip. The pool then opens a new
        # connection and tries once more.
        if closed_by_server(dbapi_connection):
            raise DisconnectionError("connection closed by the server")

    return engine


def closed_by_server(dbapi_connection: Any) -> bool:
    """Whether an idle psycopg connection is gone: closed, or with bytes waiting
    that no query asked for."""
    if dbapi_connection.closed:
        return True
    try:
        readable, _, _ = select.select([dbapi_connection.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


@contextmanager
def write_session(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session in one write transaction, committed on success, rolled back on error."""
    with WRITES.write(), factory() as session, session.begin():
        session.connection(execution_options={_WRITE: True})
        yield session


@contextmanager
def read_session(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A session for reads only; it never takes the SQLite write lock."""
    with factory() as session, session.begin():
        yield session


def changed_rows(
    session: Session,
    statement: UpdateBase,
    params: Mapping[str, Any] | Sequence[Mapping[str, Any]] | None = None,
) -> int:
    """How many rows an UPDATE or DELETE (run once, or once per ``params``) matched."""
    # Session.execute runs DML into a CursorResult, but its stubs type every result
    # as Result, which has no rowcount: the cast names what it returns.
    return cast(CursorResult[Any], session.execute(statement, params)).rowcount
