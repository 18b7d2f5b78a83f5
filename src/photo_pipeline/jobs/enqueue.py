"""Enqueue: requests checked and hashed (an idempotency key replays the same
request, refuses a different one; ``join_equivalent`` joins the same request already
waiting on the same prerequisites), prerequisites checked and counted, and any number
of jobs written in one transaction of a few multi-row statements (jobs.inserts),
waking idle workers at commit; ``submit_or_join`` joins the active job holding the
lock instead of being refused by it; ``add_items`` grows a job that exists."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Row, select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from photo_pipeline.db import write_session
from photo_pipeline.db.errors import unique_violation
from photo_pipeline.db.schema import job_items, job_prerequisites, jobs
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs import locks, queries, wakeup
from photo_pipeline.jobs.errors import (
    InvalidArgument,
    InvalidTransition,
    JobBlocked,
    JobConflict,
    LockHeld,
)
from photo_pipeline.jobs.events import write_event
from photo_pipeline.jobs.inserts import insert_chunked, insert_items, insert_jobs
from photo_pipeline.jobs.lease import check_fence
from photo_pipeline.jobs.rows import JobSnapshot, lock_job, snapshot
from photo_pipeline.jobs.states import ACTIVE_STATES, JobState
from photo_pipeline.jobs.store import JobStore

_LOOKUP_CHUNK = 1000  # ids or keys per IN (...) list
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
        "join_equivalent",
    }
)
# The states of a job that another request for the same work may join: it has still
# to run, or runs (not one being cancelled, nor one that ended).
_JOINABLE_STATES = (JobState.QUEUED, JobState.RETRY_QUEUED, JobState.RUNNING)


class Enqueued(NamedTuple):
    job: JobSnapshot
    created: bool  # False: an idempotent replay returned the original job


# Whether an active job holding the lock a request needs may stand for it.
Joins = Callable[[JobSnapshot], bool]


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
    join_equivalent: bool = False


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
    join_equivalent: bool = False,
) -> Request:
    """Check one request as ``enqueue`` takes it. ``join_equivalent``: a job of the
    very same request (type, params, items, lock, priority, attempts and the same
    prerequisites) that is waiting on those prerequisites, or running, is returned
    (``created`` False) instead of a second one, as an idempotent replay would be: a
    chain whose first step was joined (a rejoining import) joins its next steps too.
    Only for a request with prerequisites, which are what finds that job."""
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
    if join_equivalent and not prereq_ids:
        raise InvalidArgument(
            "invalid_request", "join_equivalent needs prerequisites (they find the job to join)"
        )
    return Request(
        job_type, lock, idempotency_key, keys, params, priority, run_after, max_attempts,
        prereq_ids, request_hash, bool(join_equivalent),
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


def submit(store: JobStore, batch: list[Request]) -> list[Enqueued]:
    """Write ``batch`` in one transaction, all or none, and return one result per
    request, in order (an idempotent replay's is the original job); new jobs that
    can run wake idle workers at commit."""
    if not batch:
        return []
    keyed = any(r.idempotency_key is not None for r in batch)
    for attempt in (1, 2):
        try:
            with write_session(store.session_factory) as session:
                now = store.clock.now(session)
                results = write_batch(session, batch, now)
                created = [q.job for q in results if q.created]
                wakeup.runnable(session, [j["job_type"] for j in created if j["waiting_for"] == 0])
            break
        except IntegrityError as exc:
            # A concurrent enqueue with one of our idempotency keys committed
            # first (PostgreSQL may report the lock index if it checked that one
            # first): once more, and its job is a replay.
            if keyed and attempt == 1:
                continue
            held = [r.lock for r in batch if r.lock is not None]
            if held and unique_violation(exc) == "uq_jobs_active_lock":
                raise locks.lock_held(store, held) from exc
            raise
    return results


def submit_or_join(store: JobStore, req: Request, joins: Joins | None = None) -> Enqueued:
    """``submit`` one request that takes a lock or, while an active job holds that
    lock and ``joins`` accepts it, that job (``created`` False): a command run again
    after it was killed finds the job it queued. By default only a job of this very
    request joins (same type and params). ``LockHeld`` when none does."""
    try:
        return submit(store, [req])[0]
    except LockHeld:
        if req.lock is None:  # a request that takes no lock is never refused one
            raise
        accepts = joins or _same_type_and_params(req)
        for holder in locks.blockers(store, req.lock):
            job = queries.get(store, holder["id"])
            if job is not None and accepts(job):  # None: it ended and was pruned meanwhile
                return Enqueued(job, False)
        raise


def _same_type_and_params(req: Request) -> Joins:
    return lambda job: job["job_type"] == req.job_type and job["params"] == req.params


def add_items(
    store: JobStore, job_id: str, item_keys: Iterable[str], *, fencing_token: int | None
) -> int:
    """Add items to an active job; keys already present are ignored. Returns how
    many were new."""
    keys = check.item_keys(item_keys)
    with write_session(store.session_factory) as session:
        now = store.clock.now(session)
        row = lock_job(session, job_id)
        check_fence(row, fencing_token)
        if JobState(row.state) not in ACTIVE_STATES:
            raise InvalidTransition("invalid_transition", f"cannot add items to a {row.state} job")
        existing = (
            set(
                session.scalars(
                    select(job_items.c.item_key).where(
                        job_items.c.job_id == job_id, job_items.c.item_key.in_(keys)
                    )
                )
            )
            if keys
            else set()
        )
        new = [k for k in keys if k not in existing]
        insert_items(session, job_id, new, now)
        if new:
            write_event(session, job_id, "items_added", now, data={"count": len(new)})
        return len(new)


def write_batch(session: Session, batch: list[Request], now: datetime) -> list[Enqueued]:
    """Write ``batch`` inside the caller's write transaction; returns one result per
    request, in order. Raises as ``enqueue`` does (``idempotency_conflict``,
    ``unknown_prerequisite``, ``prerequisite_failed``); a lock taken by another job
    shows as an IntegrityError of ``uq_jobs_active_lock`` for the caller to name."""
    results: list[Enqueued | None] = [None] * len(batch)
    existing = _by_idempotency_keys(session, [r.idempotency_key for r in batch])
    equivalents = _equivalents(session, batch)
    first_with_key: dict[str, int] = {}
    new: list[int] = []
    for n, req in enumerate(batch):
        key = req.idempotency_key
        if key is not None and key in existing:
            results[n] = Enqueued(same_request(existing[key], req.request_hash), False)
        elif n in equivalents:
            results[n] = Enqueued(snapshot(equivalents[n]), False)
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
        raise LockHeld(
            f"lock {held_twice!r} is requested by two jobs of one batch",
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
    inserted = insert_jobs(session, rows, items, now)
    insert_chunked(session, job_prerequisites, edges)
    for n in new:
        results[n] = Enqueued(inserted[ids[n]], True)
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


def replay(
    store: JobStore,
    idempotency_key: str | None,
    job_type: str,
    params: Mapping[str, Any],
    *,
    fixed_when_queued: Iterable[str] = (),
) -> Enqueued | None:
    """The job an earlier request with ``idempotency_key`` made, as a replay
    (``created`` False); None for no key or a new one. For a starter that judges a
    request against the library before queueing it: a replay is recognised before that
    judgement, which the job itself may have changed (files organized, times shifted).
    The job must be of ``job_type`` with these ``params``, except the ones named in
    ``fixed_when_queued`` (a cutoff taken from the clock, say); else
    ``idempotency_conflict``."""
    if idempotency_key is None:
        return None
    found = queries.find_by_idempotency_key(store, idempotency_key)
    if found is None:
        return None
    ignored = set(fixed_when_queued)
    stored = {k: v for k, v in found["params"].items() if k not in ignored}
    asked = {k: v for k, v in params.items() if k not in ignored}
    if found["job_type"] != job_type or stored != asked:
        raise _key_taken(idempotency_key, found["id"])
    return Enqueued(found, False)


def same_request(existing: Row[Any], request_hash: str) -> JobSnapshot:
    if existing.request_hash != request_hash:
        raise _key_taken(existing.idempotency_key, existing.id)
    return snapshot(existing)


def _key_taken(idempotency_key: str, job_id: str) -> JobConflict:
    return JobConflict(
        "idempotency_conflict",
        f"idempotency key {idempotency_key!r} was used for a different request (job {job_id})",
    )


def _by_idempotency_keys(session: Session, keys: list[str | None]) -> dict[str, Row[Any]]:
    wanted = sorted({k for k in keys if k is not None})
    found: dict[str, Row[Any]] = {}
    for start in range(0, len(wanted), _LOOKUP_CHUNK):
        chunk = wanted[start : start + _LOOKUP_CHUNK]
        for row in session.execute(select(jobs).where(jobs.c.idempotency_key.in_(chunk))):
            found[row.idempotency_key] = row
    return found


def _equivalents(session: Session, batch: list[Request]) -> dict[int, Row[Any]]:
    """For each request of ``batch`` that joins an equivalent job, the job it joins
    (by position in the batch), if there is one. The same request hashes the same, its
    prerequisites included, and such a job depends on the first of them (an indexed
    lookup). Their rows are locked first, so that of two such requests at once the
    second waits, and then finds the job the first one made."""
    joining = [(n, req) for n, req in enumerate(batch) if req.join_equivalent]
    if not joining:
        return {}
    prerequisites = sorted({p for _, req in joining for p in req.prerequisites})
    session.execute(
        select(jobs.c.id).where(jobs.c.id.in_(prerequisites)).order_by(jobs.c.id).with_for_update()
    ).all()
    found: dict[int, Row[Any]] = {}
    for n, req in joining:
        row = session.execute(
            select(jobs)
            .join(job_prerequisites, job_prerequisites.c.job_id == jobs.c.id)
            .where(
                job_prerequisites.c.prerequisite_id == req.prerequisites[0],
                jobs.c.request_hash == req.request_hash,
                jobs.c.state.in_(_JOINABLE_STATES),
            )
            .order_by(jobs.c.seq)
            .limit(1)
        ).first()
        if row is not None:
            found[n] = row
    return found


def _check_prerequisites(session: Session, prerequisites: list[list[str]]) -> list[int]:
    """For each request, the prerequisites still to succeed; refuses unknown or
    failed ones. The rows are share-locked so that none of them can finish between
    this count and our commit (its success would not see our edge and never release
    us)."""
    wanted = sorted({p for ids in prerequisites for p in ids})
    states: dict[str, str] = {}
    for start in range(0, len(wanted), _LOOKUP_CHUNK):
        chunk = wanted[start : start + _LOOKUP_CHUNK]
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
