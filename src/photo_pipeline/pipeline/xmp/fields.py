"""The catalogue's curation of assets as the XMP they should carry
(``media.xmp.XmpCuration``), and back: what a sidecar says, as catalogue fields."""

from __future__ import annotations

from typing import Any

from sqlalchemy.orm import Session

from photo_pipeline.media.xmp import XmpCuration
from photo_pipeline.pipeline.curation.filters import curation_fields


def wanted_of(
    session: Session, asset_ids: list[int]
) -> dict[int, tuple[XmpCuration, dict[str, int]]]:
    """Each asset's curation as XMP, with its albums' ids by name (their URIs)."""
    wanted = {}
    for asset_id, row in curation_fields(session, asset_ids).items():
        wanted[asset_id] = (
            as_xmp(row),
            {album["name"]: album["id"] for album in row["albums"]},
        )
    return wanted


def as_xmp(row: dict[str, Any]) -> XmpCuration:
    """``curation_fields``' row of one asset as XMP."""
    return XmpCuration(
        rating=row["rating"],
        favorite=row["favorite"],
        rejected=row["rejected"],
        tags=tuple(row["tags"]),
        albums=tuple(album["name"] for album in row["albums"]),
    )
