"""Driver errors translated in one place, per dialect."""

from __future__ import annotations

import functools
import os
import socket
import sqlite3
import urllib.parse
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import ParamSpec, TypeVar

from sqlalchemy import Engine, Index, PoolProxiedConnection, UniqueConstraint
from sqlalchemy.engine import ExceptionContext
from sqlalchemy.exc import IntegrityError, InterfaceError, OperationalError

from photo_pipeline.db.lock_holders import LockHolder, write_lock_holders
from photo_pipeline.db.schema import metadata
from photo_pipeline.errors import PhotoPipelineError

_SQLITE_UNIQUE = "UNIQUE constraint failed: "


def _unique_names_by_columns() -> dict[str, str]:
    names: dict[str, str] = {}
    for table in metadata.tables.values():
        uniques: list[UniqueConstraint | Index] = [
            c for c in table.constraints if isinstance(c, UniqueConstraint)
        ]
        uniques += [i for i in table.indexes if isinstance(i, Index) and i.unique]
        for unique in uniques:
            columns = ", ".join(f"{table.name}.{c.name}" for c in unique.columns)
            names[columns] = str(unique.name)
    return names


_BY_COLUMNS = _unique_names_by_columns()


def unique_violation(exc: IntegrityError) -> str | None:
    """The name of the unique constraint or index ``exc`` violated, else None.

    PostgreSQL reports it (SQLSTATE 23505); SQLite names the columns instead.
    """
    orig = exc.orig
    if getattr(orig, "sqlstate", None) == "23505":
        import psycopg  # the driver that raised it: loaded already

        return orig.diag.constraint_name if isinstance(orig, psycopg.Error) else None
    message = str(orig)
    if message.startswith(_SQLITE_UNIQUE):
        return _BY_COLUMNS.get(message[len(_SQLITE_UNIQUE) :].strip())
    return None


class DatabaseUnavailable(PhotoPipelineError):
    """The database could not be reached or stayed locked; safe to try again later."""

    code = "database_unavailable"
    status = 503


class DatabaseLocked(DatabaseUnavailable):
    """SQLite's write lock stayed taken for longer than a writer waits for it
    (``database_locked``); the detail names the process of this host holding it, and
    whether it is stopped, when /proc tells (``holders``: pid, state, worker_id)."""

    code = "database_locked"


class DatabaseReadOnly(PhotoPipelineError):
    """A write to a SQLite database this process may only read (``database_read_only``):
    a read-only mount or permissions. Commands that only read still work."""

    code = "database_read_only"
    status = 503


def read_only_write(context: ExceptionContext, database: Path) -> None:
    """SQLite engines' ``handle_error`` hook: "attempt to write a readonly database"
    raises ``DatabaseReadOnly`` with what to do."""
    original = context.original_exception
    if not isinstance(original, sqlite3.OperationalError):
        return
    name = getattr(original, "sqlite_errorname", "") or ""
    if name.startswith("SQLITE_READONLY") or "readonly database" in str(original):
        raise DatabaseReadOnly(
            detail=f"the library database {database} is read-only here (a read-only mount "
            "or permissions): commands that only read (assets, jobs, duplicates…) work; "
            "run this one where the library home is writable",
            database=str(database),
        )


def stalled_writer(context: ExceptionContext, database: Path) -> None:
    """SQLite engines' ``handle_error`` hook: "database is locked" (the busy timeout
    ran out) raises ``DatabaseLocked`` naming who holds the lock of ``database``."""
    original = context.original_exception
    if not isinstance(original, sqlite3.OperationalError):
        return
    name = getattr(original, "sqlite_errorname", "") or ""
    if not (name.startswith("SQLITE_BUSY") or "database is locked" in str(original)):
        return
    holders = [
        (holder, _registered_worker(database, holder.pid))
        for holder in write_lock_holders(database)
    ]
    raise DatabaseLocked(
        "database_locked",
        locked_detail(holders),
        holders=[
            {"pid": h.pid, "state": h.state, "worker_id": worker_id} for h, worker_id in holders
        ],
    )


def locked_detail(holders: Sequence[tuple[LockHolder, str | None]]) -> str:
    """What a writer that gave up on the lock says: who holds it, what it is doing and
    what to do (``holders``: each holder with its worker id, None when not a worker)."""
    if not holders:
        return (
            "database is locked: another process held the library's write lock for longer "
            "than a writer waits; no process of this host holds it now (it has just let "
            "go, or it runs on another machine that shares the database file)"
        )
    parts = []
    for holder, worker_id in holders:
        pid = holder.pid
        if pid == os.getpid():
            parts.append(
                f"the library is locked by this very process (PID {pid}, another of its "
                "threads), which held the lock for longer than a writer waits: a very long write"
            )
            continue
        who = (
            f"worker PID {pid} on this host ({worker_id})"
            if worker_id
            else f"process PID {pid} on this host ({holder.command or 'unknown command'})"
        )
        if holder.stopped:
            parts.append(
                f"the library is locked by {who}, which is {holder.doing}: resume it with "
                f"`kill -CONT {pid}` or end it with `kill -KILL {pid}` (a stopped process "
                "acts on a plain `kill` only once continued)"
            )
        else:
            parts.append(
                f"the library is locked by {who}, which is {holder.doing} and held the "
                "lock for longer than a writer waits: a very long write, or a process stuck"
            )
    return "database is locked: " + "; ".join(parts)


def _registered_worker(database: Path, pid: int) -> str | None:
    """The id of the worker this host registered with ``pid`` (the latest one, a pid
    being reused), read on a connection of its own: the lock held blocks no reader in
    WAL mode, and the engine's pool may be busy. None when unknown."""
    uri = f"file:{urllib.parse.quote(str(database))}?mode=ro"
    try:
        connection = sqlite3.connect(uri, uri=True, timeout=0.5)
    except sqlite3.Error:
        return None
    try:
        row = connection.execute(
            "SELECT id FROM workers WHERE host = ? AND pid = ? ORDER BY started_at DESC LIMIT 1",
            (socket.gethostname(), pid),
        ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        connection.close()
    return str(row[0]) if row else None


# A connection refused, lost or not accepted yet: SQLSTATE class 08 (connection
# exception), 57P01-57P03 (the server shutting down, crashed, or still starting),
# 53300 (too many connections).
_UNREACHABLE_SQLSTATES = frozenset({"57P01", "57P02", "57P03", "53300"})


def unreachable(context: ExceptionContext) -> None:
    """The engines' ``handle_error`` hook: a connection that could not be opened or
    broke under a statement raises ``DatabaseUnavailable`` wherever it happens
    (opening the library, migrations, any query), never the driver's error."""
    if context.is_pre_ping:
        return  # the pool replaces a dead pooled connection by itself
    error = context.sqlalchemy_exception
    sqlstate = str(getattr(context.original_exception, "sqlstate", None) or "")
    lost = (
        context.is_disconnect
        or sqlstate.startswith("08")
        or sqlstate in _UNREACHABLE_SQLSTATES
        # No connection yet: connecting itself failed.
        or (context.connection is None and isinstance(error, (OperationalError, InterfaceError)))
    )
    if lost:
        raise DatabaseUnavailable("database_unavailable", _one_line(context.original_exception))


def raw_connection(engine: Engine) -> PoolProxiedConnection:
    """The pool's driver connection, for code that runs statements on the driver
    itself. Connecting there passes no ``handle_error`` hook, so a refused connection
    is reported as ``DatabaseUnavailable`` here, as ``unreachable`` does elsewhere."""
    try:
        return engine.raw_connection()
    except engine.dialect.loaded_dbapi.Error as exc:
        raise DatabaseUnavailable("database_unavailable", _one_line(exc)) from exc


def _one_line(exc: BaseException) -> str:
    """The driver's message without its hints on further lines."""
    return next(
        (line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__
    )


# Deadlock and serialization failure: PostgreSQL rolled the transaction back, and
# running it again from the start is safe.
_TRANSIENT_SQLSTATES = frozenset({"40P01", "40001"})
_ATTEMPTS = 5

P = ParamSpec("P")
T = TypeVar("T")


def transactional(method: Callable[P, T]) -> Callable[P, T]:
    """Run a method that is one whole transaction again when the database aborted it
    as a deadlock victim; report an unreachable or locked database as
    ``DatabaseUnavailable`` instead of leaking the driver's error."""

    @functools.wraps(method)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> T:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                return method(*args, **kwargs)
            except OperationalError as exc:
                sqlstate = getattr(exc.orig, "sqlstate", None)
                if sqlstate in _TRANSIENT_SQLSTATES and attempt < _ATTEMPTS:
                    continue
                driver_error = exc.orig if exc.orig is not None else exc
                raise DatabaseUnavailable("database_unavailable", _one_line(driver_error)) from exc
        raise AssertionError("unreachable")

    return wrapper
