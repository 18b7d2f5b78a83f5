"""Favourite, rating (0-5, 0: unrated) and reject flag of assets. Setting what an
asset already has changes nothing: it is neither a change nor a new version."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import asset_curation
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.pipeline.curation.assets import checked_ids, chunks
from photo_pipeline.pipeline.curation.changes import ensure_rows, touch

MAX_RATING = 5


class InvalidRating(PhotoPipelineError):
    code = "invalid_rating"
    status = 422


# A mark's value on an asset never curated.
_UNSET: dict[str, Any] = {"rating": 0, "favorite": False, "rejected": False}


@dataclass
class Changed:
    """What a curation request did: the assets it changed and those that already had it."""

    changed: list[int] = field(default_factory=list)
    unchanged: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"changed": self.changed, "unchanged": self.unchanged}


def set_rating(factory: sessionmaker[Session], asset_ids: Iterable[int], rating: int) -> Changed:
    if type(rating) is not int or not 0 <= rating <= MAX_RATING:
        raise InvalidRating(detail=f"a rating is 0 to {MAX_RATING} (0: unrated), got {rating!r}")
    return _set_mark(factory, list(asset_ids), "rating", rating)


def set_favorite(factory: sessionmaker[Session], asset_ids: Iterable[int], on: bool) -> Changed:
    return _set_mark(factory, list(asset_ids), "favorite", bool(on))


def set_rejected(factory: sessionmaker[Session], asset_ids: Iterable[int], on: bool) -> Changed:
    return _set_mark(factory, list(asset_ids), "rejected", bool(on))


@transactional
def _set_mark(
    factory: sessionmaker[Session], asset_ids: list[int], name: str, value: Any
) -> Changed:
    """Set one mark on every asset named (all of them or, when one is unknown, none)."""
    now = utc_now()
    column = asset_curation.c[name]
    with write_session(factory) as session:
        ids = checked_ids(session, asset_ids)
        current = _current(session, ids, name)
        outcome = Changed()
        for asset_id in ids:
            has = current.get(asset_id, _UNSET[name])
            (outcome.unchanged if has == value else outcome.changed).append(asset_id)
        ensure_rows(session, outcome.changed, now)
        for chunk in chunks(outcome.changed):
            session.execute(
                update(asset_curation)
                .where(asset_curation.c.asset_id.in_(chunk))
                .values({column: value})
            )
        touch(session, outcome.changed, now, name)
    return outcome


def _current(session: Session, ids: list[int], name: str) -> dict[int, Any]:
    column = asset_curation.c[name]
    found: dict[int, Any] = {}
    for chunk in chunks(ids):
        query = select(asset_curation.c.asset_id, column).where(
            asset_curation.c.asset_id.in_(chunk)
        )
        found.update({asset_id: value for asset_id, value in session.execute(query)})
    return found
