"""The durable event log as one feed over all jobs, for live streams and polling.

``job_events.seq`` is the cursor. A reader that has seen every event up to ``seq = N``
asks for ``seq > N`` and must never find later that an event ``<= N`` appeared. Per job
that holds because events are written under the job's row lock. Across jobs:

- SQLite serialises writers (``BEGIN IMMEDIATE``) and the table is AUTOINCREMENT, so a
  number is never reused even after old events are pruned.
- PostgreSQL allocates sequence values without regard to commit order. A writer takes
  a transaction-scoped advisory lock in *shared* mode before its first event, so
  writers never wait for each other (their commits flush together). A reader takes
  the same lock *exclusively* for a moment: once granted, every transaction that took
  a number before it has ended, and every number taken after it is higher; the
  highest committed ``seq`` then is a horizon no later commit can fall under. Readers
  read only up to it, so a reader may wait for an open writer, as writers used to
  wait for each other (bench/coordinator.py: 4 worker processes were serialised on
  that lock through every commit).

On PostgreSQL an event transaction also ``NOTIFY``s ``EVENTS_CHANNEL`` (delivered at
commit, collapsed per transaction), so listeners wake without waiting for their next
poll, except a worker's claim and success (jobs.hot_path): notifying commits queue
on one lock through their flush. Readers that follow the feed poll briefly as well
(the API's hub: every 0.25 s, a cheap look at the highest number when idle).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, text
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.dialect import engine_of, is_postgresql, libpq_conninfo
from photo_pipeline.db.schema import job_events

EVENTS_CHANNEL = "photo_pipeline_events"
_PG_EVENT_ORDER_LOCK = 0x70686F746F5F6576  # "photo_ev": event writers (shared), readers
_ORDER_LOCK_TAKEN = "photo_pipeline.event_order_lock"


def write_event(
    session: Session,
    job_id: str,
    event_type: str,
    now: datetime,
    *,
    message: str | None = None,
    data: dict[str, Any] | None = None,
) -> None:
    """Append one event inside the caller's transaction (which holds the job's lock)."""
    take_order_lock(session)
    session.execute(
        insert(job_events).values(
            job_id=job_id, event_type=event_type, message=message, data=data, created_at=now
        )
    )


# (job_id, event_type, message, data)
Event = tuple[str, str, str | None, dict[str, Any] | None]


def write_events(session: Session, events: list[Event], now: datetime) -> None:
    """Append ``(job_id, event_type, message, data)`` events in one statement, inside
    the caller's transaction, which holds their jobs' rows (or made them: new jobs)."""
    if not events:
        return
    take_order_lock(session)
    rows = [
        {"job_id": j, "event_type": t, "message": m, "data": d, "created_at": now}
        for j, t, m, d in events
    ]
    for start in range(0, len(rows), 1000):
        session.execute(insert(job_events), rows[start : start + 1000])


def take_order_lock(session: Session) -> None:
    """PostgreSQL: before a transaction's first event (see the module's docstring)."""
    if is_postgresql(session):
        transaction = session.get_transaction()
        if session.info.get(_ORDER_LOCK_TAKEN) is not transaction:
            session.execute(ORDER_LOCK_SQL)
            session.info[_ORDER_LOCK_TAKEN] = transaction


# PostgreSQL: taken before a transaction's first event, held until its commit.
ORDER_LOCK_SQL = text(
    f"SELECT pg_advisory_xact_lock_shared({_PG_EVENT_ORDER_LOCK}), "
    f"pg_notify('{EVENTS_CHANNEL}', '')"
)
# PostgreSQL: a reader's wait for every writer that took a number before it.
_HORIZON_LOCK_SQL = text(f"SELECT pg_advisory_xact_lock({_PG_EVENT_ORDER_LOCK})")
_MAX_SEQ = select(func.coalesce(func.max(job_events.c.seq), 0))


def event_dict(row: Any) -> dict[str, Any]:
    return {
        "seq": row.seq,
        "job_id": row.job_id,
        "type": row.event_type,
        "message": row.message,
        "data": row.data,
        "created_at": row.created_at,
    }


class EventFeed:
    """Reads the log across all jobs in cursor order."""

    def __init__(self, session_factory: sessionmaker[Session]) -> None:
        self._session_factory = session_factory

    @property
    def is_postgresql(self) -> bool:
        return is_postgresql(self._session_factory)

    def after(self, seq: int, *, limit: int = 1000) -> list[dict[str, Any]]:
        """Events of every job with ``seq > seq``, oldest first: only committed ones
        that no later commit can precede."""
        query = select(job_events).where(job_events.c.seq > seq)
        if self.is_postgresql:
            if self._newest_committed() <= seq:
                return []  # nothing new: no need to wait for writers
            horizon = self.last_seq()
            if horizon <= seq:
                return []
            query = query.where(job_events.c.seq <= horizon)
        with read_session(self._session_factory) as session:
            rows = session.execute(query.order_by(job_events.c.seq).limit(limit))
            return [event_dict(row) for row in rows]

    def _newest_committed(self) -> int:
        with read_session(self._session_factory) as session:
            return session.scalar(_MAX_SEQ) or 0

    def last_seq(self) -> int:
        """The highest ``seq`` a reader may have seen: no event at or below it can
        still commit (on PostgreSQL, after waiting for writers that hold numbers;
        see the module's docstring)."""
        with read_session(self._session_factory) as session:
            if self.is_postgresql:
                # Its own statement, so that the next one's snapshot starts after
                # the wait (READ COMMITTED). The lock ends with this short transaction.
                session.execute(_HORIZON_LOCK_SQL)
            return session.scalar(_MAX_SEQ) or 0

    def listen(self, wake: Callable[[], None], stop: threading.Event) -> None:
        """PostgreSQL only: call ``wake`` after every commit that wrote events, until
        ``stop`` is set. Blocks; run it in a thread. Raises if the connection drops
        (the caller falls back to polling and retries)."""
        import psycopg

        url = engine_of(self._session_factory).url
        conninfo = libpq_conninfo(url)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            conn.execute(f"LISTEN {EVENTS_CHANNEL}")
            while not stop.is_set():
                # A bounded wait so that ``stop`` is noticed.
                for _ in conn.notifies(timeout=1.0, stop_after=1):
                    wake()
