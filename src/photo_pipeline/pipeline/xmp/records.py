"""Each asset's ``xmp_sidecars`` row: its sidecar as the catalogue last wrote or read
it (pipeline.xmp)."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.schema import xmp_sidecars
from photo_pipeline.pipeline.files import paths


def save_sidecar(
    session: Session,
    asset_id: int,
    *,
    state: str,
    now: Any,
    path: str | None = None,
    fields: dict[str, Any] | None = None,
    stamp: str | None = None,
    message: str | None = None,
) -> None:
    """Set the asset's ``xmp_sidecars`` row (``fields``/``stamp`` None: keep those)."""
    values: dict[str, Any] = {"state": state, "message": message, "synced_at": now}
    if path is not None:
        values["path"] = paths.to_text(path)
    if fields is not None:
        values["fields"] = fields
    if stamp is not None:
        values["stamp"] = stamp
    upsert = insert_for(session, xmp_sidecars).values(asset_id=asset_id, **values)
    session.execute(
        upsert.on_conflict_do_update(
            index_elements=["asset_id"], set_={k: upsert.excluded[k] for k in values}
        )
    )
