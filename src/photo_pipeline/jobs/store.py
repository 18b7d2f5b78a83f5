"""What the coordinator's modules work with: the session factory, the dialect, the
time decisions are made with, the state changes with their retry policy, and
(PostgreSQL) a connection on which a one-statement change commits by itself."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from sqlalchemy import ClauseElement, Connection, Engine
from sqlalchemy.engine import Dialect
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.dialect import engine_of, is_postgresql
from photo_pipeline.db.errors import raw_connection
from photo_pipeline.jobs.clock import Clock, TrustedClock
from photo_pipeline.jobs.transitions import Transitions

if TYPE_CHECKING:
    import psycopg


class JobStore:
    """One per ``JobService``; holds no state of its own beyond what it is given."""

    def __init__(
        self, session_factory: sessionmaker[Session], clock: Clock | None, transitions: Transitions
    ) -> None:
        self.session_factory = session_factory
        self.engine: Engine = engine_of(session_factory)
        # Asked once: the hot path (jobs.lease) branches on it per statement.
        self.is_postgresql: bool = is_postgresql(self.engine)
        # Without a clock (production) leases, expiry, backoff and recovery use the
        # database's time; a clock given (tests) is used instead.
        self.clock = TrustedClock(self.engine, clock)
        self.transitions = transitions

    @contextmanager
    def autocommit(self) -> Iterator[Connection]:
        """PostgreSQL: a connection on which each statement commits by itself (one
        round trip for a one-statement change, no BEGIN/COMMIT)."""
        with self.engine.connect() as conn:
            yield conn.execution_options(isolation_level="AUTOCOMMIT")

    def run_one(self, statement: ClauseElement, params: dict[str, Any]) -> tuple[Any, ...] | None:
        """PostgreSQL: ``run_all`` of a change that returns at most one row."""
        rows = self.run_all(statement, params)
        return rows[0] if rows else None

    def run_all(self, statement: ClauseElement, params: dict[str, Any]) -> list[tuple[Any, ...]]:
        """PostgreSQL: run a one-statement change, committing by itself, straight on
        the pooled connection's driver (prepared), and return its rows. SQLAlchemy's
        result handling cost a fifth of a worker's time per job
        (bench/coordinator.py). Driver errors are raised as SQLAlchemy's, as
        ``db.errors.transactional`` expects; a broken connection leaves the pool."""
        import psycopg  # here: SQLite commands start without it (the engine loaded it)

        sql = _driver_sql(statement, self.engine.dialect)
        hooks = self.engine.dispatch.before_cursor_execute
        if hooks:  # statement hooks still see it (tests and bench/coordinator.py count)
            hooks(None, None, sql, params, None, False)
        pooled = raw_connection(self.engine)
        try:
            driver: psycopg.Connection[Any] = pooled.driver_connection  # type: ignore[assignment]
            driver.autocommit = True
            try:
                return driver.execute(sql, params, prepare=True).fetchall()
            except psycopg.Error as exc:
                broken = driver.broken
                if broken:
                    pooled.invalidate(exc)
                raise DBAPIError.instance(
                    sql, params, exc, psycopg.Error, connection_invalidated=broken
                ) from exc
            finally:
                if not driver.closed:
                    driver.autocommit = False  # the pool's other users run transactions
        finally:
            pooled.close()


@functools.cache
def _driver_sql(statement: ClauseElement, dialect: Dialect) -> str:
    """The statement as psycopg takes it (``%(name)s`` placeholders)."""
    return str(statement.compile(dialect=dialect))
