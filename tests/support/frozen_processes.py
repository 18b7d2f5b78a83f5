"""Freeze a worker process (SIGSTOP, as a paused VM would) at a moment it holds no
database lock.

A process frozen inside a SQLite write transaction keeps the write lock until it wakes,
and no other process can write; PostgreSQL ends such a session only after
idle_in_transaction_session_timeout. Neither is what the tests that freeze a worker
are about, so they freeze it outside transactions.
"""

from __future__ import annotations

import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, make_url, text
from sqlalchemy.exc import OperationalError

from tests.support.cli_processes import wait_until


def stopped(pid: int) -> bool:
    """Whether every thread of the process is stopped (state ``T`` in /proc).

    kill(SIGSTOP) returns before the process stops: a thread inside a system call (an
    fsync, a lock request) stops only when the call returns, maybe holding a lock it did
    not hold a moment before. Only a stopped process can be checked for locks."""
    for stat_path in Path(f"/proc/{pid}/task").glob("*/stat"):
        stat = stat_path.read_text()
        if stat[stat.rindex(")") + 2] != "T":
            return False
    return True


def holds_lock(db_url: str, job_id: str | None = None) -> bool:
    """Whether some session holds SQLite's write lock, or (PostgreSQL, with a job id)
    the job's row, right now."""
    url = make_url(db_url)
    if url.get_backend_name() == "sqlite":
        conn = sqlite3.connect(str(url.database), timeout=0.2, isolation_level=None)
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            return False
        except sqlite3.OperationalError:  # database is locked
            return True
        finally:
            conn.close()
    if job_id is None:
        return False
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text("SET LOCAL lock_timeout = '200ms'"))
            conn.execute(text("SELECT 1 FROM jobs WHERE id = :id FOR UPDATE"), {"id": job_id})
        return False
    except OperationalError:
        return True
    finally:
        engine.dispose()


def freeze_outside_transactions(
    send_signal: Callable[[int], None],
    pid: int,
    db_url: str,
    job_id: str | None = None,
    after_thaw: Callable[[], None] = lambda: None,
) -> None:
    """SIGSTOP the process, and keep it stopped only once it holds no lock.

    ``after_thaw`` runs when the process was caught inside a transaction and let go
    again: e.g. wait until it has committed more, so that the next try does not stop
    it inside the same transaction."""
    for _ in range(50):
        send_signal(signal.SIGSTOP)
        wait_until(lambda: stopped(pid), "the process to stop")
        if not holds_lock(db_url, job_id):
            return
        send_signal(signal.SIGCONT)
        after_thaw()
    raise AssertionError("the process always held a lock when frozen")
