"""Each asset's curation version and the outbox of assets changed since a writer last
wrote them.

A change (``touch``) bumps ``asset_curation.version`` and sets the asset's
``curation_pending`` row to that version, in the caller's transaction. A writer (the XMP
sidecar job) reads ``pending_changes``, writes each asset's current curation, and then
``mark_written`` with the versions it wrote: a pending row goes only if no later change
came meanwhile, so nothing changed is ever missed, however transactions interleave.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import delete, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import asset_curation, curation_field_changes, curation_pending
from photo_pipeline.pipeline.curation.assets import chunks


def ensure_rows(session: Session, asset_ids: list[int], now: datetime) -> None:
    """An ``asset_curation`` row for each asset (unrated, no marks, version 0)."""
    for chunk in chunks(asset_ids):
        session.execute(
            insert_for(session, asset_curation)
            .values([{"asset_id": i, "version": 0, "curated_at": now} for i in chunk])
            .on_conflict_do_nothing(index_elements=["asset_id"])
        )


# The curation fields, as ``curation_field_changes`` and the XMP writer name them.
FIELDS = ("rating", "favorite", "rejected", "tags", "albums")


def touch(session: Session, asset_ids: list[int], now: datetime, field: str) -> None:
    """Record that ``field`` (one of FIELDS) of ``asset_ids`` changed: a new version of
    each, pending for the writers, and the field's change time."""
    if not asset_ids:
        return
    ensure_rows(session, asset_ids, now)
    for chunk in chunks(sorted(set(asset_ids))):
        stamped = insert_for(session, curation_field_changes).values(
            [{"asset_id": a, "field": field, "changed_at": now} for a in chunk]
        )
        session.execute(
            stamped.on_conflict_do_update(
                index_elements=["asset_id", "field"],
                set_={"changed_at": stamped.excluded.changed_at},
            )
        )
        session.execute(
            update(asset_curation)
            .where(asset_curation.c.asset_id.in_(chunk))
            .values(version=asset_curation.c.version + 1, curated_at=now)
        )
        versions = session.execute(
            select(asset_curation.c.asset_id, asset_curation.c.version).where(
                asset_curation.c.asset_id.in_(chunk)
            )
        ).all()
        upsert = insert_for(session, curation_pending).values(
            [{"asset_id": a, "version": v, "changed_at": now} for a, v in versions]
        )
        session.execute(
            upsert.on_conflict_do_update(
                index_elements=["asset_id"],
                set_={"version": upsert.excluded.version, "changed_at": upsert.excluded.changed_at},
            )
        )


def pending_changes(factory: sessionmaker[Session], *, limit: int = 1000) -> list[dict[str, Any]]:
    """The assets changed and not written yet, oldest change first: ``asset_id``,
    ``version`` (what ``mark_written`` is given back) and ``changed_at``."""
    with read_session(factory) as session:
        query = (
            select(curation_pending)
            .order_by(curation_pending.c.changed_at, curation_pending.c.asset_id)
            .limit(limit)
        )
        return [dict(row._mapping) for row in session.execute(query)]


@transactional
def mark_written(factory: sessionmaker[Session], written: dict[int, int]) -> int:
    """Take the assets of ``written`` (asset id → the version written) off the outbox,
    each only if no later change is pending; how many went."""
    gone = 0
    with write_session(factory) as session:
        for asset_id, version in written.items():
            gone += changed_rows(
                session,
                delete(curation_pending).where(
                    curation_pending.c.asset_id == asset_id,
                    curation_pending.c.version <= version,
                ),
            )
    return gone
