"""Ticking: each due tick of a schedule queues its job exactly once, across every
worker on every host, timed by the database's clock.

A tick is handled in three short steps, each safe to run by many workers at once:

1. under the schedule's row lock, decide: nothing is due; or skip the tick (the job
   of the previous one is still active: counted, with the reason); or mark it
   pending. Only the latest due tick is decided on: ticks missed while nothing ran
   are caught up once, not once each;
2. queue the job with the idempotency key ``schedule:<id>:<tick>``: a second worker
   (or the next one, after a crash between the steps) gets the same job back;
3. record the tick and its job, and when the next tick falls due.

A lock the job needs that another job holds (the library lock of a verify while an
organize runs) skips the tick too, saying which job held it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Row, or_, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import DatabaseUnavailable, transactional
from photo_pipeline.db.schema import jobs, schedules
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.clock import micros
from photo_pipeline.jobs.schedules.book import Schedules, timing_of
from photo_pipeline.jobs.states import ACTIVE_STATES

log = logging.getLogger("photo_pipeline.schedules")

_DUE_PER_CHECK = 20  # schedules ticked per check; the rest at the next


@dataclass(frozen=True)
class Tick:
    schedule_id: int
    tick: datetime
    job_id: str | None  # None: skipped
    created: bool = False  # this call queued the job (not another worker)
    skipped: str | None = None  # why


def tick_key(schedule_id: int, tick: datetime) -> str:
    """The idempotency key of one tick's job."""
    return f"schedule:{schedule_id}:{micros(tick)}"


class Ticker:
    """Ticks the due schedules of one database (see the module's docstring)."""

    def __init__(self, book: Schedules) -> None:
        self.book = book
        self._sessions = book.service.session_factory

    def check(self) -> tuple[list[int], float | None]:
        """The schedules with a tick due now (or one pending) whose job types this
        process can queue, and the seconds until the next one falls due (None: none
        is active): one indexed query, cheap enough for every worker's loop."""
        with read_session(self._sessions) as session:
            rows = session.execute(
                select(
                    schedules.c.id,
                    schedules.c.job_type,
                    schedules.c.next_due,
                    schedules.c.pending_tick,
                    self.book.clock.sql().label("now"),
                )
                .where(
                    or_(
                        schedules.c.paused == False,  # noqa: E712  (SQL, not Python)
                        schedules.c.pending_tick.is_not(None),
                    ),
                    # Types another process queues must not crowd ours out of the page.
                    schedules.c.job_type.in_(self.book.kinds.job_types()),
                )
                .order_by(schedules.c.next_due)
                .limit(_DUE_PER_CHECK)
            ).all()
        due, later = [], None
        for row in rows:
            if row.pending_tick is not None or row.next_due <= row.now:
                due.append(row.id)
            elif later is None:
                later = (row.next_due - row.now).total_seconds()
        return due, 0.0 if due else later

    def tick_due(self) -> list[Tick]:
        """Tick every due schedule; returns what this call did."""
        return [done for schedule_id in self.check()[0] if (done := self.tick(schedule_id))]

    def tick(self, schedule_id: int) -> Tick | None:
        decided = self._decide(schedule_id)
        if decided is None or decided.skipped is not None:
            return decided
        row_params, job_type, tick = self._pending(schedule_id)
        if tick is None:
            return None  # another worker finished it meanwhile
        kind = self.book.kinds.get(job_type)
        try:
            queued = kind.start(self.book.service, dict(row_params), tick_key(schedule_id, tick))
        except DatabaseUnavailable:
            raise  # left pending: the next check (here or elsewhere) finishes it
        except PhotoPipelineError as exc:
            return self._record(schedule_id, tick, None, reason=f"{exc.code}: {exc.detail}")
        return self._record(schedule_id, tick, queued.job["id"], created=queued.created)

    @transactional
    def _decide(self, schedule_id: int) -> Tick | None:
        with write_session(self._sessions) as session:
            row = _locked(session, schedule_id)
            if row is None:
                return None
            if row.pending_tick is not None:
                return Tick(schedule_id, row.pending_tick, None)
            if row.paused:
                return None
            now = self.book.clock.now(session)
            when = timing_of(row)
            seen = row.last_tick or row.created_at
            latest = when.latest_at_or_before(now)
            if latest is None or latest <= seen:
                _set(session, schedule_id, next_due=when.next_after(max(seen, now)))
                return None
            active = _active_job(session, row.last_job_id)
            if active is not None:
                reason = f"the previous job {active[0]} is still {active[1]}"
                _skip(session, row, latest, now, reason)
                return Tick(schedule_id, latest, None, skipped=reason)
            _set(session, schedule_id, pending_tick=latest)
            return Tick(schedule_id, latest, None)

    def _pending(self, schedule_id: int) -> tuple[dict[str, Any], str, datetime | None]:
        with read_session(self._sessions) as session:
            row = session.execute(select(schedules).where(schedules.c.id == schedule_id)).first()
        if row is None:
            return {}, "", None
        return row.params, row.job_type, row.pending_tick

    @transactional
    def _record(
        self,
        schedule_id: int,
        tick: datetime,
        job_id: str | None,
        *,
        created: bool = False,
        reason: str | None = None,
    ) -> Tick:
        with write_session(self._sessions) as session:
            row = _locked(session, schedule_id)
            if row is not None and row.pending_tick == tick:
                next_due = timing_of(row).next_after(tick)
                if job_id is None:
                    _skip(session, row, tick, self.book.clock.now(session), str(reason))
                else:
                    _set(
                        session,
                        schedule_id,
                        last_tick=tick,
                        pending_tick=None,
                        last_job_id=job_id,
                        next_due=next_due,
                    )
                    if created:
                        log.info("schedule %s: tick %s queued job %s", schedule_id, tick, job_id)
            elif row is not None and job_id is not None and row.last_tick == tick:
                _set(session, schedule_id, last_job_id=job_id)  # a skip raced our job
        return Tick(schedule_id, tick, job_id, created=created, skipped=reason)


def _locked(session: Session, schedule_id: int) -> Row[Any] | None:
    return session.execute(
        select(schedules).where(schedules.c.id == schedule_id).with_for_update()
    ).first()


def _active_job(session: Session, job_id: str | None) -> tuple[str, str] | None:
    if job_id is None:
        return None
    state = session.scalar(select(jobs.c.state).where(jobs.c.id == job_id))
    return (job_id, state) if state in ACTIVE_STATES else None


def _skip(session: Session, row: Row[Any], tick: datetime, now: datetime, reason: str) -> None:
    log.info("schedule %s: tick %s skipped: %s", row.id, tick, reason)
    _set(
        session,
        row.id,
        last_tick=tick,
        pending_tick=None,
        skipped_ticks=schedules.c.skipped_ticks + 1,
        last_skipped_at=now,
        last_skip_reason=reason,
        next_due=timing_of(row).next_after(tick),
    )


def _set(session: Session, schedule_id: int, **values: Any) -> None:
    session.execute(update(schedules).where(schedules.c.id == schedule_id).values(**values))
