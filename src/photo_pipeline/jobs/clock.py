"""Whose clock the coordinator trusts: the database's.

Leases, their expiry, backoff (``run_after``) and recovery are decided with the
database server's time, so that a worker whose clock is off can neither steal a live
lease nor keep a dead one. Times are stored as integer UTC microseconds
(``db.schema.UTCDateTime``); ``db_now`` is the same number computed by the server.

Tests drive time by handing ``JobService`` a ``clock`` (a fake one); then that clock
is used instead, bound as a parameter.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

from sqlalchemy import ColumnElement, literal_column
from sqlalchemy.engine import Dialect

from photo_pipeline.db.schema import UTCDateTime

Clock = Callable[[], datetime]

# Tests only: shift this process's own clock, to show that nothing the coordinator
# decides depends on it (a worker an hour fast or slow).
CLOCK_OFFSET_ENV = "PHOTO_PIPELINE_CLOCK_OFFSET_SECONDS"
_OFFSET = timedelta(seconds=float(os.environ.get(CLOCK_OFFSET_ENV) or 0))

# Microseconds since the epoch, per dialect. statement_timestamp() is stable within a
# statement (so it may sit in an index condition) and, unlike now(), is not frozen at
# the start of a long transaction. SQLite 3.40 has no unixepoch('subsec'); julianday
# gives sub-millisecond resolution and 'now' is fixed for one statement.
_DB_NOW_SQL = {
    "postgresql": "CAST(extract(epoch FROM statement_timestamp()) * 1000000 AS bigint)",
    "sqlite": "CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER)",
}


def utc_now() -> datetime:
    """This process's clock (shifted by ``PHOTO_PIPELINE_CLOCK_OFFSET_SECONDS``)."""
    return datetime.now(UTC) + _OFFSET


def db_now_sql(dialect: Dialect | str) -> str:
    """The server's time as SQL text: integer UTC microseconds."""
    name = dialect if isinstance(dialect, str) else dialect.name
    return _DB_NOW_SQL[name]


def db_now(dialect: Dialect | str, plus: timedelta | float = 0) -> ColumnElement[datetime]:
    """The server's time (``plus`` seconds later) as a UTCDateTime expression."""
    seconds = plus.total_seconds() if isinstance(plus, timedelta) else plus
    sql = db_now_sql(dialect)
    if seconds:
        sql = f"({sql} + {round(seconds * 1_000_000)})"
    return literal_column(sql, UTCDateTime())
