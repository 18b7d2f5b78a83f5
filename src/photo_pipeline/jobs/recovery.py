"""Jobs whose worker vanished, and retention: ``recover_stale`` hands back the jobs of
expired leases and dead workers (``claim`` runs it now and then, so recovery needs
no cron); ``prune`` deletes finished jobs and old events."""

from __future__ import annotations

import time
from collections.abc import Iterable
from datetime import datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    and_,
    column,
    delete,
    func,
    literal,
    literal_column,
    or_,
    select,
    table,
)
from sqlalchemy.exc import ProgrammingError

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.schema import UTCDateTime, job_events, jobs, workers
from photo_pipeline.jobs.clock import TrustedClock
from photo_pipeline.jobs.errors import InvalidArgument
from photo_pipeline.jobs.rows import job_with_facts
from photo_pipeline.jobs.states import FINISHED_STATES, LEASED_STATES, JobState, WorkerState
from photo_pipeline.jobs.store import JobStore

_RECOVERY_BATCH = 200
# A transaction that has waited this long for its client while holding the row of a
# job whose lease is void belongs to a client that froze or was cut off.
STUCK_CLIENT_SECONDS = 2
_INSUFFICIENT_PRIVILEGE = "42501"
_activity = table(
    "pg_stat_activity",
    *(column(name) for name in ("pid", "backend_xid", "datname", "state", "wait_event")),
    column("state_change"),
)
_locks = table("pg_locks", column("pid"), column("relation"), column("granted"))


class RecoverySchedule:
    """When ``claim`` runs ``recover_stale``: at most every ``every`` (never if None)."""

    def __init__(self, every: timedelta | None, clock: TrustedClock) -> None:
        self._every = every
        self._clock = clock
        self._last: float | None = None

    def due(self) -> bool:
        """Whether recovery is due now; if so, counts it as run."""
        if self._every is None:
            return False
        # The given clock's time (tests move it), else this process's monotonic one.
        at = self._clock.local().timestamp() if self._clock.fixed else time.monotonic()
        last = self._last
        if last is None or at - last >= self._every.total_seconds() or at < last:
            self._last = at
            return True
        return False


def recover_stale(
    store: JobStore, *, now: datetime | None, dead_workers: Iterable[str]
) -> list[str]:
    """Recover jobs whose lease expired or whose worker is known to be dead, in
    batches: a running job is re-queued (its interrupted items queued again) without
    spending an attempt, after the backoff of its interruption count, or failed once
    ``max_interruptions`` run out; a cancelling job is cancelled. Returns their ids."""
    given = now
    # The registry's dead workers (found gone by any worker) void their leases too.
    owner_dead = or_(
        jobs.c.lease_owner.in_(list(dead_workers)),
        jobs.c.lease_owner.in_(select(workers.c.id).where(workers.c.state == WorkerState.DEAD)),
    )
    if store.is_postgresql:
        at = store.clock.sql() if given is None else literal(given, UTCDateTime())
        _end_stuck_holders(store, _abandoned(at, owner_dead))
    recovered: list[str] = []
    while True:
        with write_session(store.session_factory) as session:
            now = given or store.clock.now(session)
            stale = session.execute(
                job_with_facts()
                .add_columns(owner_dead.label("owner_dead"))
                .where(_abandoned(now, owner_dead))
                .order_by(jobs.c.lease_expires_at)
                .limit(_RECOVERY_BATCH)
                # Rows a live worker is writing right now are skipped, not waited for.
                .with_for_update(skip_locked=True, of=jobs)
            ).all()
            for row in stale:
                if row.state == JobState.CANCELLING:
                    error = ("cancelled", "worker vanished while cancelling")
                    store.transitions.apply(session, row, JobState.CANCELLED, now, error=error)
                else:
                    # Not the handler's fault: the attempt is refunded and one
                    # interruption counted (a crash loop still ends, later).
                    error = (
                        ("worker_died", f"worker {row.lease_owner} is gone")
                        if row.owner_dead
                        else ("lease_expired", f"worker {row.lease_owner} stopped heartbeating")
                    )
                    store.transitions.apply(
                        session, row, JobState.FAILED, now, error=error, interrupted=True
                    )
                recovered.append(row.id)
        if len(stale) < _RECOVERY_BATCH:
            break
    return recovered


def _abandoned(
    now: datetime | ColumnElement[datetime], owner_dead: ColumnElement[bool]
) -> ColumnElement[bool]:
    """Leased jobs whose lease expired by ``now`` or whose worker is dead."""
    return and_(jobs.c.state.in_(LEASED_STATES), or_(jobs.c.lease_expires_at < now, owner_dead))


def _end_stuck_holders(store: JobStore, abandoned: ColumnElement[bool]) -> None:
    """PostgreSQL: end the sessions whose transaction holds the row of an
    ``abandoned`` job and has waited at least ``STUCK_CLIENT_SECONDS`` for its client.

    Recovery skips locked rows, and the server ends a transaction left idle by a
    frozen or cut-off client (db.engine), but not one stopped inside a multi-message
    exchange: a pipelined ``executemany`` or a ``COPY`` leaves the session *active*,
    waiting to read, with no timeout of PostgreSQL before 17 applying, and the job
    could never be recovered. The holder is found by the row's ``xmax`` (its
    transaction id); ending it is the fencing the lease's expiry already decided. An
    ``xmax`` that is a multixact (several lockers) is not a transaction id: the holder
    must also hold a lock on this ``jobs`` table, so a chance equal number elsewhere
    ends nobody."""
    holder = _activity.c
    holds_jobs = (
        select(_locks.c.pid)
        .where(
            _locks.c.pid == holder.pid,
            _locks.c.relation == literal_column("'jobs'::regclass"),
            _locks.c.granted,
        )
        .exists()
    )
    stuck = (
        # Without a timeout (PostgreSQL 13 has none): the holder's locks go as it
        # exits, an instant later, so the sweep after this one recovers its job.
        select(func.pg_terminate_backend(holder.pid))
        .select_from(jobs.join(_activity, holder.backend_xid == literal_column("jobs.xmax")))
        .where(
            holder.datname == func.current_database(),
            holder.pid != func.pg_backend_pid(),
            holder.state != "idle",
            holder.wait_event == "ClientRead",
            holds_jobs,
            holder.state_change
            < func.clock_timestamp() - literal_column(f"interval '{STUCK_CLIENT_SECONDS} s'"),
        )
    )
    try:
        with read_session(store.session_factory) as session:
            session.execute(stuck.where(abandoned))
    except ProgrammingError as exc:
        # Another role's session: only that role (or a superuser) may end it; the
        # server's idle timeout is left to do what it can.
        if getattr(exc.orig, "sqlstate", None) != _INSUFFICIENT_PRIVILEGE:
            raise


def prune(
    store: JobStore, *, older_than: timedelta, now: datetime | None, keep_types: Iterable[str] = ()
) -> dict[str, int]:
    """Delete finished jobs (with their items and events) that finished more than
    ``older_than`` ago, but for jobs of ``keep_types``, and older events of other
    finished jobs. Active jobs and their events are never touched."""
    if not isinstance(older_than, timedelta) or older_than < timedelta(0):
        raise InvalidArgument(
            "invalid_older_than", f"older_than must be a timedelta >= 0, got {older_than!r}"
        )
    finished = [s.value for s in FINISHED_STATES]
    with write_session(store.session_factory) as session:
        cutoff = (now or store.clock.now(session)) - older_than
        old_jobs = select(jobs.c.id).where(
            jobs.c.state.in_(finished),
            jobs.c.finished_at < cutoff,
            jobs.c.job_type.not_in(list(keep_types)),
        )
        events = changed_rows(
            session,
            delete(job_events).where(
                job_events.c.created_at < cutoff,
                job_events.c.job_id.in_(select(jobs.c.id).where(jobs.c.state.in_(finished))),
            ),
        )
        # Items, events and prerequisite edges go with their job (ON DELETE CASCADE).
        deleted = changed_rows(session, delete(jobs).where(jobs.c.id.in_(old_jobs)))
    return {"jobs": deleted, "events": events}
