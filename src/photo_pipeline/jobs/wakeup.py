"""Waking idle workers when a job becomes runnable (enqueued, handed back, its last
prerequisite done) or gets a time to run (delayed, a retry's backoff), instead of
having them poll: woken, they claim, or wait until the earliest such time.

PostgreSQL: the writing transaction ``NOTIFY``s ``RUNNABLE_CHANNEL`` with the job
type (delivered at commit, to every process that listens). In this process, waiters
of the same database are woken after the commit too (the embedded worker on SQLite,
where there is no NOTIFY; workers in other SQLite processes poll briefly).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable

from sqlalchemy import Engine, event, text
from sqlalchemy.engine import URL
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import is_postgresql, libpq_conninfo

RUNNABLE_CHANNEL = "photo_pipeline_runnable"
_PENDING = "photo_pipeline.runnable_types"

_lock = threading.Lock()
_waiters: dict[str, set[threading.Event]] = {}


def database_key(bind: Session | Engine) -> str:
    engine = bind.get_bind().engine if isinstance(bind, Session) else bind
    return engine.url.render_as_string(hide_password=True)


def subscribe(key: str, waiter: threading.Event) -> Callable[[], None]:
    """Set ``waiter`` whenever a job of this database becomes runnable in this
    process; returns the unsubscribe function."""
    with _lock:
        _waiters.setdefault(key, set()).add(waiter)

    def unsubscribe() -> None:
        with _lock:
            _waiters.get(key, set()).discard(waiter)

    return unsubscribe


def wake_local(key: str) -> None:
    with _lock:
        waiters = list(_waiters.get(key, ()))
    for waiter in waiters:
        waiter.set()


def runnable(session: Session, job_types: Iterable[str]) -> None:
    """Within a write transaction: jobs of ``job_types`` become runnable at commit."""
    types = sorted(set(job_types))
    if not types:
        return
    if is_postgresql(session):
        session.execute(
            text("SELECT pg_notify(:channel, t) FROM unnest(CAST(:types AS text[])) AS t"),
            {"channel": RUNNABLE_CHANNEL, "types": types},
        )
    if _PENDING not in session.info:
        session.info[_PENDING] = True
        key = database_key(session)

        def after_commit(committed: Session) -> None:
            committed.info.pop(_PENDING, None)
            wake_local(key)

        def after_rollback(rolled_back: Session) -> None:
            rolled_back.info.pop(_PENDING, None)

        event.listen(session, "after_commit", after_commit, once=True)
        event.listen(session, "after_soft_rollback", after_rollback, once=True)


def listen(
    url: URL, job_types: Iterable[str], wake: Callable[[], None], stop: threading.Event
) -> None:
    """PostgreSQL: call ``wake`` whenever a job of ``job_types`` becomes runnable,
    until ``stop`` is set. Blocks (run it on a thread); raises if the connection
    drops, for the caller to fall back to polling and listen again."""
    import psycopg

    types = set(job_types)
    conninfo = libpq_conninfo(url)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        conn.execute(f"LISTEN {RUNNABLE_CHANNEL}")
        wake()  # anything that became runnable before we listened
        while not stop.is_set():
            for notice in conn.notifies(timeout=1.0):  # bounded, so ``stop`` is seen
                if notice.payload in types:
                    wake()
