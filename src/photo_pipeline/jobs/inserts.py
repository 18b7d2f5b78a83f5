"""New jobs' rows written in a few multi-row statements, whatever their number:
the jobs, their items and their "queued" events (and, for ``add_items``, items of a
job that exists). On PostgreSQL the rows travel as one JSON parameter, the items as
arrays (unnest)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Row, insert, text
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import EPOCH, job_items, jobs
from photo_pipeline.jobs.clock import micros
from photo_pipeline.jobs.events import ORDER_LOCK_SQL, write_events
from photo_pipeline.jobs.rows import HIDDEN, JobSnapshot, snapshot
from photo_pipeline.jobs.states import ItemState

_CHUNK = 1000


def insert_jobs(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, JobSnapshot]:
    """Insert ``rows`` of jobs, their ``(job_id, item_key)`` items and one "queued"
    event each, inside the caller's transaction; returns the new jobs by id."""
    insert_rows = _insert_pg if is_postgresql(session) else _insert_rows
    return insert_rows(session, rows, items, now)


def insert_items(session: Session, job_id: str, keys: list[str], now: datetime) -> None:
    rows = [
        {"job_id": job_id, "item_key": k, "state": ItemState.QUEUED, "attempt_count": 0,
         "updated_at": now}
        for k in keys
    ]  # fmt: skip
    insert_chunked(session, job_items, rows)


def _insert_rows(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, JobSnapshot]:
    """Jobs, their items and "queued" events as multi-row INSERTs."""
    inserted: dict[str, Row[Any]] = {}
    for start in range(0, len(rows), _CHUNK):
        # Matched by id: asking for rows in parameter order makes SQLAlchemy insert
        # them one by one on SQLite.
        chunk = rows[start : start + _CHUNK]
        inserted.update((r.id, r) for r in session.execute(insert(jobs).returning(*jobs.c), chunk))
    insert_chunked(
        session,
        job_items,
        [
            {"job_id": j, "item_key": k, "state": ItemState.QUEUED, "attempt_count": 0,
             "updated_at": now}
            for j, k in items
        ],
    )  # fmt: skip
    counts = Counter(j for j, _ in items)
    events: list[tuple[str, str, str | None, dict[str, Any] | None]] = [
        (r["id"], "queued", None, {"items": counts[r["id"]]}) for r in rows
    ]
    write_events(session, events, now)
    return {job_id: snapshot(row) for job_id, row in inserted.items()}


def _insert_pg(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, JobSnapshot]:
    """PostgreSQL: the jobs and their "queued" events in one statement whose rows
    come as one JSON parameter (psycopg dumps one JSON text much faster than a text
    array per column), the items in a second. Nothing is read back: every column of
    a new job is known here, and fetching 1,000 rows back cost a third of a batch
    (bench/coordinator.py)."""
    if not rows:
        return {}
    counts = Counter(j for j, _ in items)
    packed = [
        [r["id"], r["job_type"], r["priority"], r["params"], r["request_hash"], r["lock_key"],
         r["idempotency_key"], r["waiting_for"], r["max_attempts"], micros(r["run_after"]),
         counts[r["id"]]]
        for r in rows
    ]  # fmt: skip
    now_us = micros(now)
    session.execute(_PG_INSERT_JOBS, {"now": now_us, "rows": json.dumps(packed)})
    if items:
        session.execute(
            _PG_INSERT_ITEMS,
            {"now": now_us, "job_ids": [j for j, _ in items], "keys": [k for _, k in items]},
        )
    return {r["id"]: _new_job(r) for r in rows}


def _new_job(row: dict[str, Any]) -> JobSnapshot:
    """A new job's snapshot as ``RETURNING`` would have built it: every column, times
    as read back (UTC, whole microseconds)."""
    job: JobSnapshot = dict.fromkeys(_SNAPSHOT_COLUMNS)
    job.update((name, value) for name, value in row.items() if name in job)
    job["state"] = str(row["state"])
    job["interruptions"] = 0
    for name in ("run_after", "created_at", "updated_at"):
        job[name] = EPOCH + micros(row[name]) * _MICROSECOND
    return job


_SNAPSHOT_COLUMNS = [c.name for c in jobs.c if c.name not in HIDDEN]
_MICROSECOND = timedelta(microseconds=1)

# One JSON array per job: [id, job_type, priority, params, request_hash, lock_key,
# idempotency_key, waiting_for, max_attempts, run_after (µs), item count]. The events
# follow the jobs in the same statement, in the batch's order, after the order lock
# (jobs.events); their foreign keys are checked at the statement's end.
_PG_INSERT_JOBS = text(
    f"""
WITH r AS (
  SELECT e->>0 AS id, e->>1 AS job_type, CAST(e->>2 AS int) AS priority, e->3 AS params,
    e->>4 AS request_hash, e->>5 AS lock_key, e->>6 AS idempotency_key,
    CAST(e->>7 AS int) AS waiting_for, CAST(e->>8 AS int) AS max_attempts,
    CAST(e->>9 AS bigint) AS run_after, CAST(e->>10 AS int) AS items, n
  FROM json_array_elements(CAST(:rows AS json)) WITH ORDINALITY AS x(e, n)
), new AS (
  INSERT INTO jobs (id, job_type, state, priority, params, request_hash, lock_key,
    idempotency_key, waiting_for, attempts, max_attempts, interruptions, run_after,
    fencing_token, version, created_at, updated_at)
  SELECT r.id, r.job_type, 'queued', r.priority, r.params, r.request_hash, r.lock_key,
    r.idempotency_key, r.waiting_for, 0, r.max_attempts, 0, r.run_after, 0, 1, :now, :now
  FROM r ORDER BY r.n
), ordered AS (
  {ORDER_LOCK_SQL.text}
)
INSERT INTO job_events (job_id, event_type, data, created_at)
SELECT r.id, 'queued', json_build_object('items', r.items), :now
FROM r, ordered ORDER BY r.n
"""
)
_PG_INSERT_ITEMS = text(
    "INSERT INTO job_items (job_id, item_key, state, attempt_count, updated_at) "
    "SELECT r.job_id, r.item_key, 'queued', 0, :now "
    "FROM unnest(CAST(:job_ids AS text[]), CAST(:keys AS text[])) AS r(job_id, item_key)"
)


def insert_chunked(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), _CHUNK):
        session.execute(insert(table), rows[start : start + _CHUNK])
