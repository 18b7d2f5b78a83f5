"""The schedules themselves: made, listed, paused, resumed and removed.

A schedule's rows say what it queues (a job type of :mod:`.kinds` and its params),
when (:mod:`.timing`), and what it last did: its last tick, the job that tick queued,
and how many ticks it skipped (the previous job still active, a lock held) and why.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import jobs, schedules
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.clock import TrustedClock
from photo_pipeline.jobs.errors import InvalidArgument, JobConflict, JobNotFound
from photo_pipeline.jobs.schedules import timing
from photo_pipeline.jobs.schedules.kinds import Kinds, kinds
from photo_pipeline.jobs.service import JobService

Schedule = dict[str, Any]


# What a request asks for: a replay of its key must ask for the same.
_REQUEST = ("job_type", "params", "cron", "every_seconds", "time_zone", "paused")


class ScheduleNotFound(JobNotFound):
    code = "schedule_not_found"


def local_zone() -> str:
    """This machine's IANA time zone (``tzlocal``), UTC when it has none."""
    import tzlocal

    name = tzlocal.get_localzone_name()
    try:
        timing.zone(name or "")
    except InvalidArgument:
        return "UTC"
    return str(name)


def timing_of(row: Row[Any] | Mapping[str, Any]) -> timing.Timing:
    values = row._mapping if isinstance(row, Row) else row
    every = values["every_seconds"]
    return timing.Timing(
        values["cron"],
        None if every is None else timedelta(seconds=every),
        timing.zone(values["time_zone"]),
        values["created_at"],
    )


def new_row(
    job_type: str,
    params: dict[str, Any],
    *,
    cron: str | None,
    every: timedelta | None,
    time_zone: str,
    paused: bool,
    now: datetime,
    known: Kinds = kinds,
) -> dict[str, Any]:
    """The row of a new schedule, every value checked (``InvalidArgument``: a bad cron
    expression, interval, zone, job type or param)."""
    kind = known.get(check.job_type(job_type))
    if (cron is None) == (every is None):
        raise InvalidArgument(
            "invalid_schedule", "a schedule has a cron expression or an interval (one of the two)"
        )
    row = {
        "job_type": job_type,
        "params": check.params(kind.check_params(dict(params))),
        "cron": None if cron is None else timing.check_cron(cron),
        "every_seconds": None
        if every is None
        else int(timing.check_interval(every).total_seconds()),
        "time_zone": time_zone,
        "paused": bool(paused),
        "created_at": now,
        "updated_at": now,
    }
    row["next_due"] = timing_of(row).next_after(now)  # checks the zone too
    return row


class Schedules:
    """The schedules of one database, timed by the coordinator's clock (the
    database's, or a test's)."""

    def __init__(self, service: JobService, *, known: Kinds = kinds) -> None:
        self.service = service
        self.kinds = known
        self._sessions: sessionmaker[Session] = service.session_factory
        self.clock: TrustedClock = service.clock

    def add(
        self,
        job_type: str,
        params: Mapping[str, Any] | None = None,
        *,
        cron: str | None = None,
        every: timedelta | None = None,
        time_zone: str | None = None,
        paused: bool = False,
    ) -> Schedule:
        """Add a schedule (``InvalidArgument``: a bad cron expression, interval, zone,
        job type or param)."""
        return self.submit(
            job_type, params, cron=cron, every=every, time_zone=time_zone, paused=paused
        )[0]

    def submit(
        self,
        job_type: str,
        params: Mapping[str, Any] | None = None,
        *,
        cron: str | None = None,
        every: timedelta | None = None,
        time_zone: str | None = None,
        paused: bool = False,
        idempotency_key: str | None = None,
    ) -> tuple[Schedule, bool]:
        """``add`` that also says whether the schedule is new: with
        ``idempotency_key``, the same request again returns the schedule it made
        (False); another request with that key is ``idempotency_conflict``."""
        if idempotency_key is not None:
            check.key("idempotency_key", idempotency_key)
        for attempt in (1, 2):
            try:
                return self._insert(
                    job_type, dict(params or {}), cron, every, time_zone, paused, idempotency_key
                )
            except IntegrityError:
                if idempotency_key is None or attempt == 2:
                    raise  # a concurrent create with our key committed first: once more
        raise AssertionError("unreachable")

    @transactional
    def _insert(
        self,
        job_type: str,
        params: dict[str, Any],
        cron: str | None,
        every: timedelta | None,
        time_zone: str | None,
        paused: bool,
        idempotency_key: str | None,
    ) -> tuple[Schedule, bool]:
        with write_session(self._sessions) as session:
            row = new_row(
                job_type,
                params,
                cron=cron,
                every=every,
                time_zone=time_zone or local_zone(),
                paused=paused,
                now=self.clock.now(session),
                known=self.kinds,
            )
            if idempotency_key is not None:
                found = session.execute(
                    select(schedules).where(schedules.c.idempotency_key == idempotency_key)
                ).first()
                if found is not None:
                    asked = {k: row[k] for k in _REQUEST}
                    if {k: getattr(found, k) for k in _REQUEST} != asked:
                        raise JobConflict(
                            "idempotency_conflict",
                            f"idempotency key {idempotency_key!r} made schedule {found.id}, "
                            "for a different request; use a new key for a new schedule",
                            schedule_id=found.id,
                        )
                    schedule_id, created = int(found.id), False
                else:
                    schedule_id, created = self._insert_row(session, row, idempotency_key), True
            else:
                schedule_id, created = self._insert_row(session, row, None), True
        return self.get(schedule_id), created

    @staticmethod
    def _insert_row(session: Session, row: dict[str, Any], key: str | None) -> int:
        new_id = session.execute(
            insert(schedules).values(**row, idempotency_key=key).returning(schedules.c.id)
        )
        return int(new_id.scalar_one())

    @transactional
    def remove(self, schedule_id: int) -> None:
        with write_session(self._sessions) as session:
            gone = session.execute(
                delete(schedules).where(schedules.c.id == schedule_id).returning(schedules.c.id)
            ).first()
        if gone is None:
            raise _not_found(schedule_id)

    @transactional
    def pause(self, schedule_id: int) -> Schedule:
        """Stop ticking (idempotent); a tick already being queued is finished."""
        with write_session(self._sessions) as session:
            self._locked(session, schedule_id)
            session.execute(
                update(schedules)
                .where(schedules.c.id == schedule_id)
                .values(paused=True, updated_at=self.clock.now(session))
            )
        return self.get(schedule_id)

    @transactional
    def resume(self, schedule_id: int) -> Schedule:
        """Tick again from now on (idempotent): ticks that fell while it was paused
        are not caught up."""
        with write_session(self._sessions) as session:
            row = self._locked(session, schedule_id)
            if row.paused:
                now = self.clock.now(session)
                latest = timing_of(row).latest_at_or_before(now)
                seen = max([t for t in (row.last_tick, latest) if t is not None], default=None)
                session.execute(
                    update(schedules)
                    .where(schedules.c.id == schedule_id)
                    .values(
                        paused=False,
                        updated_at=now,
                        last_tick=seen,
                        next_due=timing_of(row).next_after(max(now, seen or now)),
                    )
                )
        return self.get(schedule_id)

    def get(self, schedule_id: int) -> Schedule:
        found = self._read(schedules.c.id == schedule_id)
        if not found:
            raise _not_found(schedule_id)
        return found[0]

    def list(self) -> builtins.list[Schedule]:
        return self._read(None)

    def _read(self, where: Any) -> builtins.list[Schedule]:
        query = select(schedules).order_by(schedules.c.id)
        if where is not None:
            query = query.where(where)
        with read_session(self._sessions) as session:
            rows = session.execute(query).all()
            now = self.clock.now(session)
            job_ids = sorted({r.last_job_id for r in rows if r.last_job_id})
            last_jobs: dict[str, Any] = {
                job.id: job
                for job in session.execute(
                    select(
                        jobs.c.id,
                        jobs.c.state,
                        jobs.c.error_code,
                        jobs.c.error_message,
                        jobs.c.created_at,
                        jobs.c.finished_at,
                    ).where(jobs.c.id.in_(job_ids))
                )
            }
        return [_shown(row, last_jobs.get(row.last_job_id), now) for row in rows]

    def _locked(self, session: Session, schedule_id: int) -> Row[Any]:
        row = session.execute(
            select(schedules).where(schedules.c.id == schedule_id).with_for_update()
        ).first()
        if row is None:
            raise _not_found(schedule_id)
        return row


def _shown(row: Row[Any], job: Row[Any] | None, now: datetime) -> Schedule:
    every = row.every_seconds
    next_run = None
    if not row.paused:
        next_run = row.next_due if row.pending_tick is None and row.next_due > now else now
    last_job = None
    if row.last_job_id is not None:
        last_job = (
            {"id": row.last_job_id, "state": None}  # pruned since
            if job is None
            else {
                "id": job.id,
                "state": job.state,
                "error_code": job.error_code,
                "error_message": job.error_message,
                "created_at": job.created_at,
                "finished_at": job.finished_at,
            }
        )
    return {
        "id": row.id,
        "job_type": row.job_type,
        "params": row.params,
        "cron": row.cron,
        "every": None if every is None else timing.format_interval(timedelta(seconds=every)),
        "every_seconds": every,
        "time_zone": row.time_zone,
        "paused": row.paused,
        "created_at": row.created_at,
        "next_run": next_run,
        "last_tick": row.last_tick,
        "last_job": last_job,
        "skipped_ticks": row.skipped_ticks,
        "last_skipped_at": row.last_skipped_at,
        "last_skip_reason": row.last_skip_reason,
    }


def _not_found(schedule_id: int) -> ScheduleNotFound:
    return ScheduleNotFound("schedule_not_found", f"no schedule with id {schedule_id}")
