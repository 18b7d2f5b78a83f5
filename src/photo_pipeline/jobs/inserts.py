"""New jobs' rows written in a few multi-row statements, whatever their number:
the jobs, their items and their "queued" events (and, for ``add_items``, items of a
job that exists). On PostgreSQL one array parameter per column (unnest)."""

from __future__ import annotations

import json
from collections import Counter
from datetime import datetime
from typing import Any

from sqlalchemy import Row, insert, text
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import job_items, jobs
from photo_pipeline.jobs.clock import micros
from photo_pipeline.jobs.events import take_order_lock, write_events
from photo_pipeline.jobs.states import ItemState

_CHUNK = 1000


def insert_jobs(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, Row[Any]]:
    """Insert ``rows`` of jobs, their ``(job_id, item_key)`` items and one "queued"
    event each, inside the caller's transaction; returns the inserted rows by id."""
    insert_rows = _insert_pg if session.get_bind().dialect.name == "postgresql" else _insert_rows
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
) -> dict[str, Row[Any]]:
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
    return inserted


def _insert_pg(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, Row[Any]]:
    """PostgreSQL: the same in three statements of one array parameter per column
    (unnest): a multi-row VALUES list costs the client more than the server."""
    if not rows:
        return {}
    now_us = micros(now)
    inserted = {
        r.id: r
        for r in session.execute(
            _PG_INSERT_JOBS,
            {
                "now": now_us,
                "ids": [r["id"] for r in rows],
                "types": [r["job_type"] for r in rows],
                "priorities": [r["priority"] for r in rows],
                "params": [json.dumps(r["params"]) for r in rows],
                "hashes": [r["request_hash"] for r in rows],
                "locks": [r["lock_key"] for r in rows],
                "keys": [r["idempotency_key"] for r in rows],
                "waiting": [r["waiting_for"] for r in rows],
                "max_attempts": [r["max_attempts"] for r in rows],
                "run_after": [micros(r["run_after"]) for r in rows],
            },
        )
    }
    if items:
        session.execute(
            _PG_INSERT_ITEMS,
            {"now": now_us, "job_ids": [j for j, _ in items], "keys": [k for _, k in items]},
        )
    counts = Counter(j for j, _ in items)
    take_order_lock(session)
    session.execute(
        _PG_INSERT_EVENTS,
        {"now": now_us, "ids": [r["id"] for r in rows], "counts": [counts[r["id"]] for r in rows]},
    )
    return inserted


_PG_INSERT_JOBS = text(
    """
INSERT INTO jobs (id, job_type, state, priority, params, request_hash, lock_key,
  idempotency_key, waiting_for, attempts, max_attempts, interruptions, run_after,
  fencing_token, version, created_at, updated_at)
SELECT r.id, r.job_type, 'queued', r.priority, CAST(r.params AS json), r.request_hash,
  r.lock_key, r.idempotency_key, r.waiting_for, 0, r.max_attempts, 0, r.run_after, 0, 1,
  :now, :now
FROM unnest(CAST(:ids AS text[]), CAST(:types AS text[]), CAST(:priorities AS int[]),
  CAST(:params AS text[]), CAST(:hashes AS text[]), CAST(:locks AS text[]),
  CAST(:keys AS text[]), CAST(:waiting AS int[]), CAST(:max_attempts AS int[]),
  CAST(:run_after AS bigint[]))
  AS r(id, job_type, priority, params, request_hash, lock_key, idempotency_key,
       waiting_for, max_attempts, run_after)
RETURNING *
"""
).columns(**{column.name: column.type for column in jobs.c})
_PG_INSERT_ITEMS = text(
    "INSERT INTO job_items (job_id, item_key, state, attempt_count, updated_at) "
    "SELECT r.job_id, r.item_key, 'queued', 0, :now "
    "FROM unnest(CAST(:job_ids AS text[]), CAST(:keys AS text[])) AS r(job_id, item_key)"
)
_PG_INSERT_EVENTS = text(
    "INSERT INTO job_events (job_id, event_type, data, created_at) "
    "SELECT r.job_id, 'queued', json_build_object('items', r.items), :now "
    "FROM unnest(CAST(:ids AS text[]), CAST(:counts AS int[])) WITH ORDINALITY "
    "AS r(job_id, items, n) ORDER BY r.n"
)


def insert_chunked(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), _CHUNK):
        session.execute(insert(table), rows[start : start + _CHUNK])
