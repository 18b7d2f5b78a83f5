"""The assets a curation request names: every id must be a catalogued asset, or nothing
is changed."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from sqlalchemy import select
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import assets
from photo_pipeline.errors import PhotoPipelineError

# Assets one request may name (the web UI's selection).
MAX_ASSET_IDS = 10_000
_ID_CHUNK = 500
_MAX_ID = 2**63 - 1


class AssetNotFound(PhotoPipelineError):
    code = "asset_not_found"
    status = 404


class TooManyAssets(PhotoPipelineError):
    code = "too_many_assets"
    status = 422


def chunks(ids: list[int]) -> Iterator[list[int]]:
    """``ids`` in lists short enough for one IN (...)."""
    for at in range(0, len(ids), _ID_CHUNK):
        yield ids[at : at + _ID_CHUNK]


def checked_ids(session: Session, asset_ids: Iterable[int]) -> list[int]:
    """``asset_ids`` without repeats, in the order given; ``AssetNotFound`` naming those
    that are no asset, ``TooManyAssets`` past MAX_ASSET_IDS."""
    ids = list(dict.fromkeys(asset_ids))
    if not ids:
        raise AssetNotFound(detail="name at least one asset id")
    if len(ids) > MAX_ASSET_IDS:
        raise TooManyAssets(detail=f"at most {MAX_ASSET_IDS} assets at once, got {len(ids)}")
    known: set[int] = set()
    for chunk in chunks([i for i in ids if 0 < i <= _MAX_ID]):
        known.update(session.scalars(select(assets.c.id).where(assets.c.id.in_(chunk))))
    missing = [i for i in ids if i not in known]
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (" …" if len(missing) > 10 else "")
        raise AssetNotFound(detail=f"no asset {shown}", missing=missing[:100])
    return ids
