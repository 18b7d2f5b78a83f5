"""The lease of a source's one watcher: a ``source_watchers`` row naming its holder,
renewed by heartbeat and expiring on the database's clock (as a job's lease,
``jobs.lease``), so that a watcher whose own clock is off neither steals a live lease
nor keeps a dead one. A holder whose process is gone, on the taker's own host, is taken
over at once; on another host, when its lease expires."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import delete, or_, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import source_watchers, sources
from photo_pipeline.jobs.clock import db_now
from photo_pipeline.jobs.workers import pid_alive


def new_holder_id() -> str:
    """``host:pid:random``: unique even when a pid is reused."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


@dataclass(frozen=True)
class Status:
    """What a watcher reports with each heartbeat."""

    mode: str  # inotify or poll
    reason: str | None = None  # why poll
    pending: int = 0  # changed paths not yet handed to a scan
    pending_age: float = 0.0  # seconds since the oldest of them was seen


class Leases:
    def __init__(self, sessions: sessionmaker[Session], holder: str, lease_seconds: float) -> None:
        self._sessions = sessions
        self.holder = holder
        self.lease_seconds = lease_seconds

    @transactional
    def acquire(self, source_id: int, status: Status) -> bool:
        """Take the lease of ``source_id`` if nobody holds it, its lease expired, or its
        holder's process on this host is gone; True when this holder has it now."""
        host = socket.gethostname()
        if self._held_elsewhere(source_id, host):
            return False  # read only: processes that find it held write nothing
        values = self._values(status)
        with write_session(self._sessions) as session:
            current = session.execute(
                select(
                    source_watchers.c.holder, source_watchers.c.host, source_watchers.c.pid
                ).where(source_watchers.c.source_id == source_id)
            ).first()
            if current is None:
                # RETURNING, not rowcount: psycopg's rowcount of an INSERT may be -1.
                inserted = session.scalar(
                    insert_for(session, source_watchers)
                    .values(
                        source_id=source_id,
                        holder=self.holder,
                        host=host,
                        pid=os.getpid(),
                        acquired_at=db_now(session),
                        **values,
                    )
                    .on_conflict_do_nothing(index_elements=["source_id"])
                    .returning(source_watchers.c.source_id)
                )
                return inserted is not None
            conditions = [
                source_watchers.c.holder == self.holder,
                source_watchers.c.expires_at < db_now(session),
            ]
            if current.host == host and not pid_alive(current.pid):
                # Its process is gone: taken now, unless another took it meanwhile.
                conditions.append(source_watchers.c.holder == current.holder)
            takeover = or_(*conditions)
            taken = changed_rows(
                session,
                update(source_watchers)
                .where(source_watchers.c.source_id == source_id, takeover)
                .values(
                    holder=self.holder,
                    host=host,
                    pid=os.getpid(),
                    acquired_at=db_now(session),
                    **values,
                ),
            )
            return taken == 1

    def _held_elsewhere(self, source_id: int, host: str) -> bool:
        """Whether another holder's lease is live, its process alive (if on ``host``)."""
        query = select(
            source_watchers.c.holder,
            source_watchers.c.host,
            source_watchers.c.pid,
            (source_watchers.c.expires_at > db_now(self._sessions)).label("live"),
        ).where(source_watchers.c.source_id == source_id)
        with read_session(self._sessions) as session:
            row = session.execute(query).first()
        if row is None or row.holder == self.holder or not row.live:
            return False
        return row.host != host or pid_alive(row.pid)

    @transactional
    def renew(self, source_id: int, status: Status) -> bool:
        """Extend the lease with a heartbeat; False when this holder lost it."""
        with write_session(self._sessions) as session:
            renewed = changed_rows(
                session,
                update(source_watchers)
                .where(
                    source_watchers.c.source_id == source_id,
                    source_watchers.c.holder == self.holder,
                )
                .values(**self._values(status)),
            )
        return renewed == 1

    @transactional
    def release(self, source_id: int) -> None:
        with write_session(self._sessions) as session:
            session.execute(
                delete(source_watchers).where(
                    source_watchers.c.source_id == source_id,
                    source_watchers.c.holder == self.holder,
                )
            )

    def _values(self, status: Status) -> dict[str, Any]:
        now = db_now(self._sessions)
        return {
            "mode": status.mode,
            "reason": status.reason,
            "heartbeat_at": now,
            "expires_at": db_now(self._sessions, self.lease_seconds),
            "pending": status.pending,
            "pending_since": db_now(self._sessions, -status.pending_age)
            if status.pending
            else None,
        }


def active_watchers(sessions: sessionmaker[Session]) -> list[dict[str, Any]]:
    """The watchers whose lease is live: source, path, holder, host, mode (and why
    poll), pending paths and lag (seconds since the oldest change not yet handed to a
    scan; 0 when caught up), by the database's clock."""
    now = db_now(sessions)
    query = (
        select(
            source_watchers.c.source_id,
            sources.c.path,
            source_watchers.c.holder,
            source_watchers.c.host,
            source_watchers.c.pid,
            source_watchers.c.mode,
            source_watchers.c.reason,
            source_watchers.c.pending,
            source_watchers.c.pending_since,
            source_watchers.c.heartbeat_at,
            now.label("now"),
        )
        .join(sources, sources.c.id == source_watchers.c.source_id)
        .where(source_watchers.c.expires_at > now)
        .order_by(source_watchers.c.source_id)
    )
    with read_session(sessions) as session:
        rows = [dict(row._mapping) for row in session.execute(query)]
    for row in rows:
        since, at = row.pop("pending_since"), row.pop("now")
        row["lag_seconds"] = 0.0 if since is None else max(0.0, (at - since).total_seconds())
    return rows
