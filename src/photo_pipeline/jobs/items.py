"""Item state changes: batched and validated, written in one transaction under the
job's row lock, refused from a worker that lost the job (``set_items``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import bindparam, select, text, update
from sqlalchemy.orm import Session

from photo_pipeline.db import write_session
from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import job_items
from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.errors import InvalidArgument, InvalidTransition, JobConflict, JobNotFound
from photo_pipeline.jobs.events import write_event
from photo_pipeline.jobs.lease import check_fence
from photo_pipeline.jobs.rows import lock_job
from photo_pipeline.jobs.states import TERMINAL_STATES, ItemState, JobState, can_transition_item
from photo_pipeline.jobs.store import JobStore

# Keys per IN (...) lookup: far below SQLite's bound-parameter limit.
_CHUNK = 500


class ItemUpdate(NamedTuple):
    item_key: str
    state: ItemState
    error: tuple[str, str] | None = None


def set_items(
    store: JobStore,
    job_id: str,
    updates: Iterable[Any],
    *,
    fencing_token: int | None,
    within: Callable[[Session], None] | None,
) -> JobState:
    """Apply many item changes in one transaction, all or none. Returns the job's
    state, so that a worker notices a cancel request at its next write.

    With ``fencing_token`` the writes are refused (``JobConflict``) unless the job is
    still leased under that token. ``within(session)`` writes the handler's own rows
    in the same transaction, after that check.
    """
    batch = normalise_updates(updates)
    now = store.clock.local()
    with write_session(store.session_factory) as session:
        row = lock_job(session, job_id)
        check_fence(row, fencing_token)
        if within is not None:
            within(session)
        if batch and row.state in TERMINAL_STATES:
            # A finished job's items are its record; changing them would leave,
            # say, a succeeded job with queued items for ever.
            raise InvalidTransition(
                "invalid_transition", f"job {job_id} is {row.state}: its items are final"
            )
        counts = apply_item_updates(session, job_id, batch, now) if batch else {}
        if counts:
            write_event(session, job_id, "items", now, data=counts)
        return JobState(row.state)


def normalise_updates(updates: Iterable[Any]) -> list[ItemUpdate]:
    """Check and convert ``(key, state[, error])`` tuples; each key at most once."""
    batch: list[ItemUpdate] = []
    for update_ in updates:
        if not isinstance(update_, tuple) or len(update_) not in (2, 3):
            raise InvalidArgument(
                "invalid_item_update",
                f"an item update is (item_key, state[, error]), got {update_!r}",
            )
        key, state, *rest = update_
        try:
            item_state = ItemState(state)
        except ValueError:
            raise InvalidArgument(
                "invalid_state",
                f"item state must be one of {', '.join(ItemState)}, got {state!r}",
            ) from None
        batch.append(
            ItemUpdate(check.item_key(key), item_state, check.error(rest[0] if rest else None))
        )
    if len({u.item_key for u in batch}) != len(batch):
        raise InvalidArgument("duplicate_item", "a batch must not change the same item twice")
    return batch


def apply_item_updates(
    session: Session, job_id: str, batch: list[ItemUpdate], now: datetime
) -> dict[str, int]:
    """Validate every change against the stored state, then write them all.

    The caller holds the job's row lock, which every writer of this job's items takes
    first, so the states read here cannot change before the writes. The writes are
    still conditional on those states and fail loudly if any did. Returns how many
    items entered each state (no-ops excluded).
    """
    current = _current_states(session, job_id, [u.item_key for u in batch])
    rows = []
    for item in batch:
        item_id, seen = current.get(item.item_key, (None, None))
        if seen is None:
            raise JobNotFound("item_not_found", f"job {job_id} has no item {item.item_key!r}")
        if not can_transition_item(seen, item.state):
            raise InvalidTransition(
                "invalid_transition", f"item {item.item_key!r}: {seen} -> {item.state}"
            )
        if seen == item.state and item.error is None:
            continue
        code, message = item.error or (None, None)
        rows.append(
            {
                "b_id": item_id,
                "b_seen": seen,
                "b_state": item.state.value,
                "b_code": code,
                "b_message": message,
                "b_started": int(item.state is ItemState.RUNNING and seen != ItemState.RUNNING),
                "b_now": now,
            }
        )
    if not rows:
        return {}
    statement = (
        update(job_items)
        # By primary key: PostgreSQL without statistics on a fresh job may otherwise
        # pick the (job_id, state) index and filter every item of the job.
        .where(job_items.c.id == bindparam("b_id"), job_items.c.state == bindparam("b_seen"))
        .values(
            state=bindparam("b_state"),
            error_code=bindparam("b_code"),
            error_message=bindparam("b_message"),
            attempt_count=job_items.c.attempt_count + bindparam("b_started"),
            updated_at=bindparam("b_now"),
        )
    )
    matched = session.connection().execute(statement, rows).rowcount
    if matched != len(rows):
        raise JobConflict(
            "concurrent_update", f"{len(rows) - matched} items of job {job_id} changed meanwhile"
        )
    return dict(Counter(str(r["b_state"]) for r in rows))


def _current_states(session: Session, job_id: str, keys: list[str]) -> dict[str, tuple[int, str]]:
    """``item_key -> (id, state)`` for the given keys of one job."""
    postgres = is_postgresql(session)
    states: dict[str, tuple[int, str]] = {}
    for start in range(0, len(keys), _CHUNK):
        chunk = keys[start : start + _CHUNK]
        if postgres:
            # One unique-index probe per key. A plain IN list makes PostgreSQL, before
            # it has statistics for a new job, scan every item of the job per batch.
            rows = session.execute(_PG_LOOKUP, {"job_id": job_id, "keys": chunk})
        else:
            rows = session.execute(
                select(job_items.c.item_key, job_items.c.id, job_items.c.state).where(
                    job_items.c.job_id == job_id, job_items.c.item_key.in_(chunk)
                )
            )
        states.update((key, (item_id, state)) for key, item_id, state in rows)
    return states


_PG_LOOKUP = text(
    "SELECT i.item_key, i.id, i.state FROM unnest(CAST(:keys AS text[])) AS k(key) "
    "CROSS JOIN LATERAL (SELECT item_key, id, state FROM job_items "
    "WHERE job_id = :job_id AND item_key = k.key) AS i"
)
