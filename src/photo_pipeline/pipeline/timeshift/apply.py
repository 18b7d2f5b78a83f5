"""The timeshift journal: each shifted asset's capture columns before and after, written
in the transaction that changes them, so a re-run batch never shifts twice and an undo
restores exactly what the shift replaced (a set date's source "user" included)."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select, true, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import changed_rows, read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, timeshift_entries
from photo_pipeline.jobs import utc_now
from photo_pipeline.pipeline.timeshift.arithmetic import format_shift, set_clock, shifted
from photo_pipeline.pipeline.timeshift.plan import PLAN_COLUMNS, USER_SOURCE


def journal(session_factory: sessionmaker[Session], job_id: str) -> list[dict[str, Any]]:
    """What timeshift ``job_id`` changed: one dict per asset, old and new values."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(timeshift_entries)
            .where(timeshift_entries.c.job_id == job_id)
            .order_by(timeshift_entries.c.asset_id)
        ).all()
    return [dict(row._mapping) for row in rows]


def _insert(session: Session) -> Any:
    return insert_for(session, timeshift_entries)


@transactional
def apply_shift(
    session_factory: sessionmaker[Session],
    job_id: str,
    asset_ids: list[int],
    change: timedelta | datetime,
) -> dict[int, tuple[str, str]]:
    """Shift these assets by ``change`` (a timedelta), or set their wall clock to it (a
    naive datetime: the date becomes the user's, source "user"), in one transaction,
    journalling old and new values first. An asset this job already changed is left
    alone (a re-run item). Returns the failures: asset id -> (code, message)."""
    failures: dict[int, tuple[str, str]] = {}
    now = utc_now()
    with write_session(session_factory) as session:
        rows = session.execute(
            select(*PLAN_COLUMNS).where(assets.c.id.in_(asset_ids)).with_for_update()
        ).all()
        by_id = {row.id: row for row in rows}
        for asset_id in asset_ids:
            row = by_id.get(asset_id)
            if row is None:
                failures[asset_id] = ("asset_not_found", f"asset {asset_id} no longer exists")
                continue
            try:
                if isinstance(change, datetime):
                    after = set_clock(row._mapping, change)
                else:
                    after = shifted(row._mapping, change)
            except OverflowError:
                what = change if isinstance(change, datetime) else format_shift(change)
                failures[asset_id] = (
                    "shift_out_of_range",
                    f"{row.taken_local} shifted by {what} is past year 9999",
                )
                continue
            # A set date is the user's; a shift keeps the source it corrects.
            source = USER_SOURCE if isinstance(change, datetime) else None
            recorded = session.execute(
                _insert(session)
                .values(
                    job_id=job_id,
                    asset_id=asset_id,
                    old_taken_local=row.taken_local,
                    old_taken_offset_minutes=row.taken_offset_minutes,
                    old_taken_utc=row.taken_utc,
                    old_taken_order=row.taken_order,
                    old_tz_name=row.tz_name,
                    new_taken_local=after.taken_local,
                    new_taken_offset_minutes=after.taken_offset_minutes,
                    new_taken_utc=after.taken_utc,
                    new_taken_order=after.taken_order,
                    new_tz_name=after.tz_name,
                    old_taken_source=row.taken_source if source else None,
                    new_taken_source=source,
                    shifted_at=now,
                )
                .on_conflict_do_nothing(index_elements=["job_id", "asset_id"])
                .returning(timeshift_entries.c.id)
            ).first()
            if recorded is None:
                continue  # shifted by this job before a crash: never twice
            session.execute(
                update(assets)
                .where(assets.c.id == asset_id)
                .values(
                    taken_local=after.taken_local,
                    taken_offset_minutes=after.taken_offset_minutes,
                    taken_utc=after.taken_utc,
                    taken_order=after.taken_order,
                    tz_name=after.tz_name,
                    updated_at=now,
                    **({"taken_source": source} if source else {}),
                )
            )
    return failures


@transactional
def apply_undo(
    session_factory: sessionmaker[Session],
    shift_job_id: str,
    undo_job_id: str,
    asset_ids: list[int],
) -> dict[int, tuple[str, str]]:
    """Restore the journalled old values of these assets, each only if it still holds
    exactly what the shift wrote. Returns the failures: asset id -> (code, message)."""
    failures: dict[int, tuple[str, str]] = {}
    now = utc_now()
    entries = timeshift_entries.c
    with write_session(session_factory) as session:
        rows = session.execute(
            select(timeshift_entries)
            .where(entries.job_id == shift_job_id, entries.asset_id.in_(asset_ids))
            .with_for_update()
        ).all()
        by_asset = {row.asset_id: row for row in rows}
        for asset_id in asset_ids:
            entry = by_asset.get(asset_id)
            if entry is None:
                failures[asset_id] = ("not_shifted", f"timeshift did not change asset {asset_id}")
                continue
            if entry.undone_at is not None:
                continue  # undone before a crash
            restored = changed_rows(
                session,
                update(assets)
                .where(
                    assets.c.id == asset_id,
                    assets.c.taken_local == entry.new_taken_local,
                    assets.c.taken_offset_minutes.is_not_distinct_from(
                        entry.new_taken_offset_minutes
                    ),
                    assets.c.taken_utc.is_not_distinct_from(entry.new_taken_utc),
                    assets.c.tz_name.is_not_distinct_from(entry.new_tz_name),
                    true()
                    if entry.new_taken_source is None
                    else assets.c.taken_source == entry.new_taken_source,
                )
                .values(
                    taken_local=entry.old_taken_local,
                    taken_offset_minutes=entry.old_taken_offset_minutes,
                    taken_utc=entry.old_taken_utc,
                    taken_order=entry.old_taken_order,
                    tz_name=entry.old_tz_name,
                    updated_at=now,
                    **(
                        {}
                        if entry.old_taken_source is None
                        else {"taken_source": entry.old_taken_source}
                    ),
                ),
            )
            if not restored:
                failures[asset_id] = (
                    "changed_since_shift",
                    f"asset {asset_id} was changed after the shift (by a later timeshift?): "
                    "undo that one first",
                )
                continue
            session.execute(
                update(timeshift_entries)
                .where(entries.id == entry.id)
                .values(undone_at=now, undo_job_id=undo_job_id)
            )
    return failures
