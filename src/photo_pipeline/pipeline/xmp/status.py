"""What the catalogue knows of an asset's XMP sidecar, for the API and the web UI:
where it is, whether it is written, and when curation is kept in the catalogue only
(its folder is read-only)."""

from __future__ import annotations

import os
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import curation_pending, xmp_sidecars
from photo_pipeline.pipeline.files import paths

# Each state, as a person reads it.
_SAID = {
    "written": "curation written to the XMP sidecar",
    "read": "curation read from the XMP sidecar",
    "embedded": "rating and keywords read from the photo itself",
    "read_only": "the folder is read-only: curation is kept in the catalogue only",
    "failed": "the XMP sidecar could not be written",
}


def sidecar_status(session: Session, asset_id: int) -> dict[str, Any] | None:
    """``{state, sidecar (its name), pending, said, message}``, or None: never written."""
    row = session.execute(select(xmp_sidecars).where(xmp_sidecars.c.asset_id == asset_id)).first()
    pending = (
        session.scalar(
            select(curation_pending.c.version).where(curation_pending.c.asset_id == asset_id)
        )
        is not None
    )
    if row is None or row.state == "none":  # none: its photo was read and said nothing
        return (
            {"state": "pending", "sidecar": None, "pending": True, "said": "", "message": None}
            if pending
            else None
        )
    return {
        "state": row.state,
        "sidecar": os.path.basename(paths.display(row.path)) if row.path else None,
        "pending": pending,
        "said": _SAID.get(row.state, row.state),
        "message": row.message,
    }
