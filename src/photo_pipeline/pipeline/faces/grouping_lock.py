"""One grouping of a library's faces at a time, across processes and hosts.

Two ``faces`` jobs (on two hosts, or two imports) and ``people regroup`` would
otherwise cluster the same waiting faces at once. The rows stay consistent without the
lock (a face is only placed while no one has placed it), but the second run's work is
wasted and its people end up empty; with it, the second run waits and then sees only
what the first left waiting.

On PostgreSQL it is a session-level advisory lock held on a connection of its own for
the whole run (the run commits many transactions); on SQLite, whose writers are all on
one host, an exclusive ``flock`` on a file beside the database. Either is released when
its holder's process dies, so a killed worker never leaves it held.
"""

from __future__ import annotations

import fcntl
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.dialect import engine_of, is_postgresql

GROUPING_LOCK = 0x66616365  # "face": the advisory lock key on PostgreSQL
LOCK_FILE_SUFFIX = "-grouping.lock"


def lock_file(factory: sessionmaker[Session]) -> Path | None:
    """The file a SQLite library's grouping locks (None: PostgreSQL, or in memory)."""
    engine = engine_of(factory)
    database = engine.url.database
    if is_postgresql(engine) or not database or database == ":memory:":
        return None
    return Path(database + LOCK_FILE_SUFFIX)


@contextmanager
def grouping_lock(factory: sessionmaker[Session]) -> Iterator[None]:
    """Hold the library's grouping lock, waiting while another run holds it."""
    engine = engine_of(factory)
    if is_postgresql(engine):
        with engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": GROUPING_LOCK})
            connection.commit()
            try:
                yield
            finally:
                try:
                    connection.execute(
                        text("SELECT pg_advisory_unlock(:key)"), {"key": GROUPING_LOCK}
                    )
                    connection.commit()
                except Exception:
                    # Not unlocked: the connection must not go back to the pool holding it.
                    connection.invalidate()
                    raise
        return
    path = lock_file(factory)
    if path is None:
        yield
        return
    with path.open("a+b") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
