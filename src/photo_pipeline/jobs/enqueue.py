"""Enqueue requests, checked and written in batches: one transaction and a few
multi-row statements for any number of jobs, whatever their items, locks,
idempotency keys and prerequisites."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, NamedTuple

from sqlalchemy import Row, insert, select, text
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import EPOCH, job_items, job_prerequisites, jobs
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.errors import InvalidArgument, JobBlocked, JobConflict
from photo_pipeline.jobs.events import take_order_lock, write_events
from photo_pipeline.jobs.rows import JobSnapshot, snapshot
from photo_pipeline.jobs.states import ItemState, JobState

_INSERT_CHUNK = 1000
_FIELDS = frozenset(
    {
        "job_type",
        "lock",
        "idempotency_key",
        "items",
        "params",
        "priority",
        "run_after",
        "max_attempts",
        "prerequisites",
    }
)


class Enqueued(NamedTuple):
    job: JobSnapshot
    created: bool  # False: an idempotent replay returned the original job


class Request(NamedTuple):
    """One checked enqueue request."""

    job_type: str
    lock: str | None
    idempotency_key: str | None
    items: list[str]
    params: dict[str, Any]
    priority: int
    run_after: datetime | None
    max_attempts: int
    prerequisites: list[str]
    request_hash: str


def request(
    job_type: str,
    *,
    lock: str | None = None,
    idempotency_key: str | None = None,
    items: Iterable[str] = (),
    params: dict[str, Any] | None = None,
    priority: int = 0,
    run_after: datetime | None = None,
    max_attempts: int = 3,
    prerequisites: Iterable[str] = (),
) -> Request:
    """Check one request as ``enqueue`` takes it."""
    job_type = check.job_type(job_type)
    lock = check.optional_key("lock", lock)
    idempotency_key = check.optional_key("idempotency_key", idempotency_key)
    keys = check.item_keys(items)
    params = check.params(params)
    priority = check.integer("priority", priority, -check.INT32_MAX, check.INT32_MAX)
    max_attempts = check.integer("max_attempts", max_attempts, 1, 1000)
    prereq_ids = sorted(set(check.item_keys(prerequisites)))
    if run_after is not None:
        run_after = check.aware_time("run_after", run_after)
    request_hash = _request_hash(job_type, lock, params, keys, prereq_ids, priority, max_attempts)
    return Request(
        job_type, lock, idempotency_key, keys, params, priority, run_after, max_attempts,
        prereq_ids, request_hash,
    )  # fmt: skip


def requests(specs: Iterable[Mapping[str, Any]]) -> list[Request]:
    """Check a batch: each spec holds ``enqueue``'s arguments by name."""
    checked = []
    for spec in specs:
        if not isinstance(spec, Mapping) or "job_type" not in spec:
            raise InvalidArgument(
                "invalid_request", f"each job is a mapping with a job_type, got {spec!r:.80}"
            )
        unknown = sorted(set(spec) - _FIELDS)
        if unknown:
            raise InvalidArgument("invalid_request", f"unknown fields {unknown}")
        checked.append(request(**spec))
    return checked


def write_batch(session: Session, batch: list[Request], now: datetime) -> list[Enqueued]:
    """Write ``batch`` inside the caller's write transaction; returns one result per
    request, in order. Raises as ``enqueue`` does (``idempotency_conflict``,
    ``unknown_prerequisite``, ``prerequisite_failed``); a lock taken by another job
    shows as an IntegrityError of ``uq_jobs_active_lock`` for the caller to name."""
    results: list[Enqueued | None] = [None] * len(batch)
    existing = _by_idempotency_keys(session, [r.idempotency_key for r in batch])
    first_with_key: dict[str, int] = {}
    new: list[int] = []
    for n, req in enumerate(batch):
        key = req.idempotency_key
        if key is not None and key in existing:
            results[n] = Enqueued(same_request(existing[key], req.request_hash), False)
        elif key is not None and key in first_with_key:
            first = batch[first_with_key[key]]
            if first.request_hash != req.request_hash:
                raise JobConflict(
                    "idempotency_conflict",
                    f"idempotency key {key!r} is used twice in one batch for different requests",
                )
        else:
            if key is not None:
                first_with_key[key] = n
            new.append(n)
    held_twice = _repeated([lock for n in new if (lock := batch[n].lock) is not None])
    if held_twice is not None:
        raise JobBlocked(
            "lock_held", f"lock {held_twice!r} is requested by two jobs of one batch",
            lock=held_twice, blocking_jobs=[],
        )  # fmt: skip
    waiting = _check_prerequisites(session, [batch[n].prerequisites for n in new])
    ids = {n: str(uuid.uuid4()) for n in new}
    rows = [
        {
            "id": ids[n],
            "job_type": batch[n].job_type,
            "state": JobState.QUEUED,
            "priority": batch[n].priority,
            "params": batch[n].params,
            "request_hash": batch[n].request_hash,
            "lock_key": batch[n].lock,
            "idempotency_key": batch[n].idempotency_key,
            "waiting_for": waiting_for,
            "attempts": 0,
            "max_attempts": batch[n].max_attempts,
            "run_after": batch[n].run_after or now,
            "fencing_token": 0,
            "version": 1,
            "created_at": now,
            "updated_at": now,
        }
        for n, waiting_for in zip(new, waiting, strict=True)
    ]
    edges = [{"job_id": ids[n], "prerequisite_id": p} for n in new for p in batch[n].prerequisites]
    items = [(ids[n], key) for n in new for key in batch[n].items]
    write = _write_pg if session.get_bind().dialect.name == "postgresql" else _write_rows
    inserted = write(session, rows, items, now)
    _insert_chunked(session, job_prerequisites, edges)
    for n in new:
        results[n] = Enqueued(snapshot(inserted[ids[n]]), True)
    finished: list[Enqueued] = []
    for n, req in enumerate(batch):
        result = results[n]
        if result is None:  # a repeat within the batch: the first one's job
            assert req.idempotency_key is not None  # only a keyed request repeats
            original = results[first_with_key[req.idempotency_key]]
            assert original is not None  # the first of a key is new or existing: set
            result = Enqueued(original.job, False)
        finished.append(result)
    return finished


def same_request(existing: Row[Any], request_hash: str) -> JobSnapshot:
    if existing.request_hash != request_hash:
        raise JobConflict(
            "idempotency_conflict",
            f"idempotency key {existing.idempotency_key!r} was used for a different request "
            f"(job {existing.id})",
        )
    return snapshot(existing)


def by_idempotency_key(session: Session, key: str) -> Row[Any] | None:
    return session.execute(select(jobs).where(jobs.c.idempotency_key == key)).one_or_none()


def _by_idempotency_keys(session: Session, keys: list[str | None]) -> dict[str, Row[Any]]:
    wanted = sorted({k for k in keys if k is not None})
    found: dict[str, Row[Any]] = {}
    for start in range(0, len(wanted), _INSERT_CHUNK):
        chunk = wanted[start : start + _INSERT_CHUNK]
        for row in session.execute(select(jobs).where(jobs.c.idempotency_key.in_(chunk))):
            found[row.idempotency_key] = row
    return found


def _check_prerequisites(session: Session, prerequisites: list[list[str]]) -> list[int]:
    """For each request, the prerequisites still to succeed; refuses unknown or
    failed ones. The rows are share-locked so that none of them can finish between
    this count and our commit (its success would not see our edge and never release
    us)."""
    wanted = sorted({p for ids in prerequisites for p in ids})
    states: dict[str, str] = {}
    for start in range(0, len(wanted), _INSERT_CHUNK):
        chunk = wanted[start : start + _INSERT_CHUNK]
        states.update(
            session.execute(
                select(jobs.c.id, jobs.c.state)
                .where(jobs.c.id.in_(chunk))
                .order_by(jobs.c.id)  # one lock order for every caller
                .with_for_update(read=True)
            ).all()
        )
    counts = []
    for ids in prerequisites:
        missing = [p for p in ids if p not in states]
        if missing:
            raise JobBlocked("unknown_prerequisite", f"no job with id {missing[0]!r}")
        dead = [p for p in ids if states[p] in (JobState.FAILED, JobState.CANCELLED)]
        if dead:
            raise JobBlocked(
                "prerequisite_failed", f"prerequisite job {dead[0]} is {states[dead[0]]}"
            )
        counts.append(sum(1 for p in ids if states[p] != JobState.SUCCEEDED))
    return counts


def insert_items(session: Session, job_id: str, keys: list[str], now: datetime) -> None:
    rows = [
        {"job_id": job_id, "item_key": k, "state": ItemState.QUEUED, "attempt_count": 0,
         "updated_at": now}
        for k in keys
    ]  # fmt: skip
    _insert_chunked(session, job_items, rows)


def _write_rows(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, Row[Any]]:
    """Jobs, their items and "queued" events as multi-row INSERTs."""
    inserted: dict[str, Row[Any]] = {}
    for start in range(0, len(rows), _INSERT_CHUNK):
        # Matched by id: asking for rows in parameter order makes SQLAlchemy insert
        # them one by one on SQLite.
        chunk = rows[start : start + _INSERT_CHUNK]
        inserted.update((r.id, r) for r in session.execute(insert(jobs).returning(*jobs.c), chunk))
    _insert_chunked(
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


def _write_pg(
    session: Session, rows: list[dict[str, Any]], items: list[tuple[str, str]], now: datetime
) -> dict[str, Row[Any]]:
    """PostgreSQL: the same in three statements of one array parameter per column
    (unnest): a multi-row VALUES list costs the client more than the server."""
    if not rows:
        return {}
    micros = _micros(now)
    inserted = {
        r.id: r
        for r in session.execute(
            _PG_INSERT_JOBS,
            {
                "now": micros,
                "ids": [r["id"] for r in rows],
                "types": [r["job_type"] for r in rows],
                "priorities": [r["priority"] for r in rows],
                "params": [json.dumps(r["params"]) for r in rows],
                "hashes": [r["request_hash"] for r in rows],
                "locks": [r["lock_key"] for r in rows],
                "keys": [r["idempotency_key"] for r in rows],
                "waiting": [r["waiting_for"] for r in rows],
                "max_attempts": [r["max_attempts"] for r in rows],
                "run_after": [_micros(r["run_after"]) for r in rows],
            },
        )
    }
    if items:
        session.execute(
            _PG_INSERT_ITEMS,
            {"now": micros, "job_ids": [j for j, _ in items], "keys": [k for _, k in items]},
        )
    counts = Counter(j for j, _ in items)
    take_order_lock(session)
    session.execute(
        _PG_INSERT_EVENTS,
        {"now": micros, "ids": [r["id"] for r in rows], "counts": [counts[r["id"]] for r in rows]},
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


def _micros(value: datetime) -> int:
    return (value - EPOCH) // timedelta(microseconds=1)


def _insert_chunked(session: Session, table: Any, rows: list[dict[str, Any]]) -> None:
    for start in range(0, len(rows), _INSERT_CHUNK):
        session.execute(insert(table), rows[start : start + _INSERT_CHUNK])


def _repeated(values: list[str]) -> str | None:
    seen: set[str] = set()
    for value in values:
        if value in seen:
            return value
        seen.add(value)
    return None


def _request_hash(
    job_type: str,
    lock: str | None,
    params: dict[str, Any],
    items: list[str],
    prerequisites: list[str],
    priority: int,
    max_attempts: int,
) -> str:
    request = {
        "job_type": job_type,
        "lock": lock,
        "params": params,
        "items": items,
        "prerequisites": prerequisites,
        "priority": priority,
        "max_attempts": max_attempts,
    }
    return hashlib.sha256(check.canonical_json(request).encode()).hexdigest()
