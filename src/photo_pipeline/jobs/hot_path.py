"""The statements a worker sends for every job, each one round trip: claim (with its
event; up to as many jobs as the worker has free slots, each with its own lease and
fencing token, their events in one insert) and finishing a job as succeeded (fence
check, unfinished-item check, event, release of dependents).

On PostgreSQL each is one statement (data-modifying CTEs) run outside an explicit
transaction, so it costs no BEGIN or COMMIT of its own. Neither NOTIFYs the event
channel: PostgreSQL (up to 16 at least) serialises committing transactions that
NOTIFY on one lock held through their WAL flush, which held 4 worker processes
to the speed of one (bench/coordinator.py: 252-551 jobs/s with it, 716-727 without);
event readers poll for these events (jobs.events). Releasing a dependent still
NOTIFYs the runnable channel: idle workers must wake for it. On SQLite, where a
statement is a function call and not a round trip, they are a few plain statements
in one ``BEGIN IMMEDIATE`` transaction. bench/coordinator.py measured both.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    TextualSelect,
    column,
    func,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.sql.dml import Update

from photo_pipeline.db.schema import jobs
from photo_pipeline.jobs.events import _PG_EVENT_ORDER_LOCK
from photo_pipeline.jobs.states import CLAIMABLE_STATES, LEASED_STATES, ItemState, JobState
from photo_pipeline.jobs.wakeup import RUNNABLE_CHANNEL


def _sql_list(values: Any) -> str:
    return ", ".join(repr(str(v)) for v in sorted(values))


# The claim index is partial; both planners use it only when the query repeats its
# predicate literally (a bound parameter cannot prove it).
CLAIMABLE = text(f"jobs.state IN ({_sql_list(CLAIMABLE_STATES)}) AND jobs.waiting_for = 0")


def claim_candidate(job_types: list[str], now: Any, limit: int = 1) -> Select[tuple[int]]:
    """The ``seq`` of the next ``limit`` runnable jobs, most urgent first. Per type, a
    walk of the claim index ``(job_type, priority DESC, run_after, seq)`` that stops
    after ``limit`` rows not locked by another claimer; of those heads, the most
    urgent ``limit``. Its cost does not grow with other types' backlogs."""
    order = (jobs.c.priority.desc(), jobs.c.run_after, jobs.c.seq)

    def head(job_type: str) -> Select[Any]:
        return (
            select(jobs.c.seq, jobs.c.priority, jobs.c.run_after)
            .where(CLAIMABLE, jobs.c.job_type == job_type, jobs.c.run_after <= now)
            .order_by(*order)
            .limit(limit)
            .with_for_update(skip_locked=True)  # rendered on PostgreSQL only
        )

    types = sorted(set(job_types))
    if len(types) == 1:
        return head(types[0]).with_only_columns(jobs.c.seq)
    heads = [head(t).subquery() for t in types]
    merged = union_all(*[select(h.c.seq, h.c.priority, h.c.run_after) for h in heads]).subquery()
    return (
        select(merged.c.seq)
        .order_by(merged.c.priority.desc(), merged.c.run_after, merged.c.seq)
        .limit(limit)
    )


def claim_order(row: Any) -> tuple[int, Any, int]:
    """The claim's order of a claimed row (RETURNING keeps no order)."""
    return (-row.priority, row.run_after, row.seq)


def claim_update(
    job_types: list[str],
    worker_id: str,
    now: ColumnElement[Any],
    expires: ColumnElement[Any],
    limit: int = 1,
) -> Update:
    """SQLite: lease the candidates (in the caller's write transaction, which
    serialises claimers): each a new fencing token, one more attempt."""
    if limit == 1:
        condition = jobs.c.seq == claim_candidate(job_types, now).scalar_subquery()
    else:
        condition = jobs.c.seq.in_(claim_candidate(job_types, now, limit))
    return (
        update(jobs)
        .where(condition)
        .values(
            state=JobState.RUNNING,
            lease_owner=worker_id,
            lease_expires_at=expires,
            heartbeat_at=now,
            started_at=func.coalesce(jobs.c.started_at, now),
            fencing_token=jobs.c.fencing_token + 1,
            attempts=jobs.c.attempts + 1,
            version=jobs.c.version + 1,
            updated_at=now,
        )
        .returning(*jobs.c)
    )


_LEASED = _sql_list(LEASED_STATES)
_UNFINISHED = _sql_list([ItemState.QUEUED, ItemState.RUNNING])
_CLAIMABLE_SQL = f"jobs.state IN ({_sql_list(CLAIMABLE_STATES)}) AND jobs.waiting_for = 0"
# The job's columns named in the table's order, and declared in that order: the
# result is then matched by position, which SQLAlchemy caches with the statement
# (matched by name, it builds the mapping again for every execution; a tenth of
# a worker's time per job in bench/coordinator.py). Named, because the database's
# column order is the migrations', not schema.py's.
_RESULT_COLUMNS = [column(c.name, c.type) for c in jobs.c]


def _job_columns(table: str) -> str:
    return ", ".join(f"{table}.{c.name}" for c in jobs.c)


@functools.cache
def pg_claim_text(now_sql: str) -> TextualSelect:
    """PostgreSQL: the claim as one prepared text, built once: per type in
    ``:types``, the first ``:limit`` rows of its index range (a LATERAL walk that
    skips rows other claimers hold); the most urgent ``:limit`` of those are leased
    and their events written by one insert. Client time per claim matters at
    hundreds of jobs a second (bench/coordinator.py). Rows a walk locked but did not
    lease are free again when the statement commits, at once."""
    sql = f"""
WITH picked AS (
  SELECT head.seq FROM unnest(CAST(:types AS text[])) AS wanted(job_type)
  CROSS JOIN LATERAL (
    SELECT jobs.seq, jobs.priority, jobs.run_after FROM jobs
    WHERE {_CLAIMABLE_SQL} AND jobs.job_type = wanted.job_type AND jobs.run_after <= {now_sql}
    ORDER BY jobs.priority DESC, jobs.run_after, jobs.seq
    LIMIT CAST(:limit AS integer) FOR UPDATE SKIP LOCKED
  ) AS head
  ORDER BY head.priority DESC, head.run_after, head.seq
  LIMIT CAST(:limit AS integer)
), claimed AS (
  UPDATE jobs SET state = '{JobState.RUNNING}', lease_owner = :worker_id,
    lease_expires_at = {now_sql} + :lease_us, heartbeat_at = {now_sql},
    started_at = coalesce(jobs.started_at, {now_sql}),
    fencing_token = jobs.fencing_token + 1, attempts = jobs.attempts + 1,
    version = jobs.version + 1, updated_at = {now_sql}
  FROM picked WHERE jobs.seq = picked.seq
  RETURNING jobs.*
), ordered AS (
  SELECT pg_advisory_xact_lock_shared({_PG_EVENT_ORDER_LOCK})
  FROM (SELECT 1 FROM claimed LIMIT 1) AS any_claimed
), logged AS (
  INSERT INTO job_events (job_id, event_type, message, data, created_at)
  SELECT claimed.id, 'claimed', :worker_id,
    json_build_object('fencing_token', claimed.fencing_token, 'attempt', claimed.attempts),
    claimed.updated_at
  FROM claimed, ordered
  ORDER BY claimed.priority DESC, claimed.run_after, claimed.seq
)
SELECT {_job_columns("claimed")} FROM claimed
ORDER BY claimed.priority DESC, claimed.run_after, claimed.seq
"""
    return text(sql).columns(*_RESULT_COLUMNS)


@functools.cache
def pg_succeed(now_sql: str, *, check_owner: bool) -> TextualSelect:
    """PostgreSQL: a leased job to ``succeeded`` in one statement, only under its
    current fencing token (and owner) and with no unfinished item; writes its event,
    releases the jobs waiting on it (with their events) and wakes workers for those
    that became runnable. Returns the job's row, or no row when any check failed
    (the caller then finds out which, and raises).

    The item check reads the statement's snapshot: items are written only by the
    lease holder, which finishes after its last write, and under the same token."""
    owner = "AND (jobs.lease_owner = :worker_id OR jobs.lease_owner IS NULL)" if check_owner else ""
    sql = f"""
WITH done AS (
  UPDATE jobs SET state = '{JobState.SUCCEEDED}', version = jobs.version + 1,
    updated_at = {now_sql}, finished_at = {now_sql},
    lease_owner = NULL, lease_expires_at = NULL
  WHERE jobs.id = :job_id AND jobs.fencing_token = :token AND jobs.state IN ({_LEASED}) {owner}
    AND NOT EXISTS (SELECT 1 FROM job_items AS i
                    WHERE i.job_id = :job_id AND i.state IN ({_UNFINISHED}))
  RETURNING jobs.*
), ordered AS (
  SELECT pg_advisory_xact_lock_shared({_PG_EVENT_ORDER_LOCK})
  FROM done
), released AS (
  UPDATE jobs AS d SET waiting_for = d.waiting_for - 1, version = d.version + 1
  FROM job_prerequisites AS p, done
  WHERE p.prerequisite_id = done.id AND d.id = p.job_id AND d.waiting_for > 0
  RETURNING d.id, d.job_type, d.waiting_for, done.updated_at AS at
), logged AS (
  INSERT INTO job_events (job_id, event_type, created_at)
  SELECT e.job_id, e.event_type, e.at FROM ordered, (
    SELECT 0 AS n, done.id AS job_id, 'state:{JobState.SUCCEEDED}' AS event_type,
           done.updated_at AS at FROM done
    UNION ALL
    SELECT 1, r.id, 'prerequisites_met', r.at FROM released AS r WHERE r.waiting_for = 0
  ) AS e ORDER BY e.n, e.job_id
), woken AS (
  SELECT pg_notify('{RUNNABLE_CHANNEL}', r.job_type) FROM released AS r WHERE r.waiting_for = 0
)
SELECT {_job_columns("done")} FROM done WHERE (SELECT count(*) FROM woken) >= 0
"""
    return text(sql).columns(*_RESULT_COLUMNS)


def succeed_update(
    job_id: str, token: int, worker_id: str | None, now: ColumnElement[Any]
) -> Update:
    """SQLite: the fenced, item-checked move to ``succeeded`` (the rest follows in
    the same transaction), returning the row and whether it has dependents."""
    from photo_pipeline.db.schema import job_items, job_prerequisites

    conditions = [
        jobs.c.id == job_id,
        jobs.c.fencing_token == token,
        jobs.c.state.in_(LEASED_STATES),
        ~select(job_items.c.id)
        .where(
            job_items.c.job_id == job_id,
            job_items.c.state.in_([ItemState.QUEUED, ItemState.RUNNING]),
        )
        .exists(),
    ]
    if worker_id is not None:
        conditions.append((jobs.c.lease_owner == worker_id) | jobs.c.lease_owner.is_(None))
    return (
        update(jobs)
        .where(*conditions)
        .values(
            state=JobState.SUCCEEDED,
            version=jobs.c.version + 1,
            updated_at=now,
            finished_at=now,
            lease_owner=None,
            lease_expires_at=None,
        )
        .returning(
            *jobs.c,
            select(job_prerequisites.c.job_id)
            .where(job_prerequisites.c.prerequisite_id == job_id)
            .exists()
            .label("has_dependents"),
        )
    )


@functools.cache
def pg_succeed_many(now_sql: str) -> TextualSelect:
    """PostgreSQL: ``pg_succeed`` of many leased jobs (``:ids`` with their
    ``:tokens``) in one statement and so one commit (jobs.group_commit): each moves
    only under its current fencing token and with no unfinished item; a dependent of
    several of them waits for that many fewer. Returns the rows of those that
    succeeded; the others are left as they were, for the caller to finish alone."""
    sql = f"""
WITH wanted AS (
  SELECT w.id, w.token FROM unnest(CAST(:ids AS text[]), CAST(:tokens AS bigint[])) AS w(id, token)
), done AS (
  UPDATE jobs SET state = '{JobState.SUCCEEDED}', version = jobs.version + 1,
    updated_at = {now_sql}, finished_at = {now_sql},
    lease_owner = NULL, lease_expires_at = NULL
  FROM wanted
  WHERE jobs.id = wanted.id AND jobs.fencing_token = wanted.token AND jobs.state IN ({_LEASED})
    AND NOT EXISTS (SELECT 1 FROM job_items AS i
                    WHERE i.job_id = wanted.id AND i.state IN ({_UNFINISHED}))
  RETURNING jobs.*
), ordered AS (
  SELECT pg_advisory_xact_lock_shared({_PG_EVENT_ORDER_LOCK})
  FROM (SELECT 1 FROM done LIMIT 1) AS any_done
), met AS (
  SELECT p.job_id, count(*) AS n, max(done.updated_at) AS at
  FROM job_prerequisites AS p JOIN done ON p.prerequisite_id = done.id
  GROUP BY p.job_id
), released AS (
  UPDATE jobs AS d SET waiting_for = greatest(d.waiting_for - met.n, 0),
    version = d.version + 1
  FROM met
  WHERE d.id = met.job_id AND d.waiting_for > 0
  RETURNING d.id, d.job_type, d.waiting_for, met.at
), logged AS (
  INSERT INTO job_events (job_id, event_type, created_at)
  SELECT e.job_id, e.event_type, e.at FROM ordered, (
    SELECT 0 AS n, done.seq AS k, done.id AS job_id, 'state:{JobState.SUCCEEDED}' AS event_type,
           done.updated_at AS at FROM done
    UNION ALL
    SELECT 1, 0, r.id, 'prerequisites_met', r.at FROM released AS r WHERE r.waiting_for = 0
  ) AS e ORDER BY e.n, e.k, e.job_id
), woken AS (
  SELECT pg_notify('{RUNNABLE_CHANNEL}', r.job_type) FROM released AS r WHERE r.waiting_for = 0
)
SELECT {_job_columns("done")} FROM done WHERE (SELECT count(*) FROM woken) >= 0
ORDER BY done.seq
"""
    return text(sql).columns(*_RESULT_COLUMNS)
