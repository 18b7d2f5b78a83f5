"""Whose clock the coordinator trusts: the database's.

Leases, their expiry, backoff (``run_after``) and recovery are decided with the
database server's time, so that a worker whose clock is off can neither steal a live
lease nor keep a dead one. Times are stored as integer UTC microseconds
(``db.schema.UTCDateTime``); ``db_now`` is the same number computed by the server.

Tests drive time by handing ``JobService`` a ``clock`` (a fake one); then that clock
is used instead, bound as a parameter (``TrustedClock``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, literal, literal_column, select
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import Bindable, is_postgresql
from photo_pipeline.db.schema import EPOCH, UTCDateTime

Clock = Callable[[], datetime]

# Tests only: shift this process's own clock, to show that nothing the coordinator
# decides depends on it (a worker an hour fast or slow).
CLOCK_OFFSET_ENV = "PHOTO_PIPELINE_CLOCK_OFFSET_SECONDS"
_OFFSET = timedelta(seconds=float(os.environ.get(CLOCK_OFFSET_ENV) or 0))

# Microseconds since the epoch. statement_timestamp() is stable within a statement (so
# it may sit in an index condition) and, unlike now(), is not frozen at the start of a
# long transaction. SQLite 3.40 has no unixepoch('subsec'); julianday gives
# sub-millisecond resolution and 'now' is fixed for one statement.
_PG_NOW_SQL = "CAST(extract(epoch FROM statement_timestamp()) * 1000000 AS bigint)"
_SQLITE_NOW_SQL = "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)"


def utc_now() -> datetime:
    """This process's clock (shifted by ``PHOTO_PIPELINE_CLOCK_OFFSET_SECONDS``)."""
    return datetime.now(UTC) + _OFFSET


def db_now_sql(bind: Bindable) -> str:
    """The server's time as SQL text, in the dialect of ``bind``: integer UTC
    microseconds."""
    return _PG_NOW_SQL if is_postgresql(bind) else _SQLITE_NOW_SQL


def db_now(bind: Bindable, plus: timedelta | float = 0) -> ColumnElement[datetime]:
    """The server's time (``plus`` seconds later) as a UTCDateTime expression."""
    seconds = plus.total_seconds() if isinstance(plus, timedelta) else plus
    sql = db_now_sql(bind)
    if seconds:
        sql = f"({sql} + {round(seconds * 1_000_000)})"
    return literal_column(sql, UTCDateTime())


def micros(value: datetime) -> int:
    """``value`` as stored: integer UTC microseconds since the epoch."""
    return micros_of(value - EPOCH)


def micros_of(duration: timedelta) -> int:
    return duration // timedelta(microseconds=1)


class TrustedClock:
    """The time the coordinator decides with: the database's, or the ``clock`` given
    (tests). ``local`` is the given clock or this process's, for what only people
    read (item and event times), stamped without a round trip."""

    def __init__(self, bind: Bindable, clock: Clock | None = None) -> None:
        self.fixed = clock is not None
        self.local: Clock = clock or utc_now
        self._bind = bind

    def now(self, session: Session) -> datetime:
        """One short query inside the caller's transaction, or the given clock."""
        if self.fixed:
            return self.local()
        now: datetime | None = session.scalar(select(db_now(self._bind)))
        if now is None:
            raise RuntimeError("the database returned no time")
        return now

    def sql(self, *, plus: timedelta = timedelta(0)) -> ColumnElement[datetime]:
        """The same time as SQL: the server's, or the given clock's as a parameter."""
        if self.fixed:
            return literal(self.local() + plus, UTCDateTime())
        return db_now(self._bind, plus)

    def sql_text(self, params: dict[str, Any]) -> str:
        """The time as SQL text for the hot path's prepared statements: the server's,
        or the given clock's as the ``:now`` parameter (added to ``params``)."""
        if self.fixed:
            params["now"] = micros(self.local())
            return "CAST(:now AS bigint)"
        return db_now_sql(self._bind)
