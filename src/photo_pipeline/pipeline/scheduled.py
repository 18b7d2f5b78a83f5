"""The photo jobs a schedule may queue (registered on ``jobs.schedules.kinds``) and
the default schedules a new library is given: a nightly rescan of its sources and a
weekly verify of a rolling quarter of its files (every file re-hashed every four
weeks, no run longer than a quarter of a full verify). They are ordinary schedules:
shown by ``schedule list``, paused, changed or removed like any other, and given
once (one the user removed stays removed).

The job modules are imported when a tick queues their job, not here: opening a
library must not load the decoders."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.schema import library_identity, schedules
from photo_pipeline.jobs import Enqueued, InvalidArgument, JobService
from photo_pipeline.jobs.schedules.kinds import Kind, kinds

# job type, cron expression (in the machine's time zone), params
DEFAULTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("rescan", "0 3 * * *", {}),  # every night at 03:00
    ("verify", "0 4 * * 0", {"sample": 25}),  # Sundays at 04:00, a quarter of the files
)


def _start_rescan(service: JobService, params: dict[str, Any], key: str) -> Enqueued:
    from photo_pipeline.pipeline.rescan import start_rescan

    return start_rescan(service, idempotency_key=key)


def _start_verify(service: JobService, params: dict[str, Any], key: str) -> Enqueued:
    from photo_pipeline.pipeline.verify import start_verify

    return start_verify(service, idempotency_key=key, sample=params.get("sample"))


def _verify_params(params: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(params) - {"sample"})
    if unknown:
        raise InvalidArgument("invalid_params", f"verify takes only sample, not {unknown}")
    from photo_pipeline.pipeline.verify_window import check_sample

    sample = check_sample(params.get("sample"))
    return {} if sample is None else {"sample": sample}


kinds.register(
    Kind("rescan", _start_rescan, description="Import every source again (new, changed, deleted).")
)
kinds.register(
    Kind(
        "verify",
        _start_verify,
        _verify_params,
        "Re-hash originals (sample=PERCENT: the least recently verified share).",
    )
)


def seed_defaults(service: JobService) -> int:
    """Give the library its default schedules unless it had them (or was made before
    schedules were): returns how many were added. Once per library, also when two
    processes open a new one at once."""
    sessions: sessionmaker[Session] = service.session_factory
    with read_session(sessions) as session:
        if session.scalar(select(library_identity.c.schedules_seeded)) is not False:
            return 0  # seeded, or no identity yet
    from photo_pipeline.jobs.schedules.book import local_zone, new_row

    zone = local_zone()
    with write_session(sessions) as session:
        claimed = changed_rows(
            session,
            update(library_identity)
            .where(library_identity.c.schedules_seeded == False)  # noqa: E712  (SQL)
            .values(schedules_seeded=True),
        )
        if not claimed:
            return 0
        now = service.clock.now(session)
        rows = [
            new_row(job_type, params, cron=cron, every=None, time_zone=zone, paused=False, now=now)
            for job_type, cron, params in DEFAULTS
        ]
        session.execute(insert(schedules), rows)
    return len(rows)
