"""The curation filters of asset listings, and the curation fields of listed rows.

Each filter is a condition on ``assets.id`` probed by primary key (the asset's curation
row, its tags, its album membership), so a filtered page stays a walk of the listing's
own index with its keyset cursor (``library.ordering``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import asset_curation, assets
from photo_pipeline.pipeline.curation.albums import albums_of, in_album
from photo_pipeline.pipeline.curation.assets import checked_ids, chunks
from photo_pipeline.pipeline.curation.marks import MAX_RATING, InvalidRating
from photo_pipeline.pipeline.curation.tags import normalise_tag, tagged, tags_of

_RANGE = re.compile(r"\s*(>=|<=|>|<|=)?\s*([0-9])\s*(?:-\s*([0-9])\s*)?")


@dataclass(frozen=True)
class RatingRange:
    """Ratings from ``low`` to ``high``, both inclusive (0: unrated)."""

    low: int
    high: int

    def __str__(self) -> str:
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


def parse_rating_range(text: str) -> RatingRange:
    """``4``, ``>=4``, ``>3``, ``<=2``, ``<2``, ``=0`` (unrated) or ``2-4``; ``InvalidRating``
    for anything else, or a range with nothing in 0-5."""
    match = _RANGE.fullmatch(text or "")
    if match is None:
        raise InvalidRating(
            detail=f"{text!r}: a rating filter is N, >=N, >N, <=N, <N or N-M (0 to {MAX_RATING})"
        )
    op, first, second = match.group(1), int(match.group(2)), match.group(3)
    if second is not None:
        if op is not None:
            raise InvalidRating(detail=f"{text!r}: a range N-M takes no comparison")
        low, high = first, int(second)
    else:
        low, high = {
            None: (first, first),
            "=": (first, first),
            ">=": (first, MAX_RATING),
            ">": (first + 1, MAX_RATING),
            "<=": (0, first),
            "<": (0, first - 1),
        }[op]
    if not 0 <= low <= high <= MAX_RATING or first > MAX_RATING:
        raise InvalidRating(detail=f"{text!r}: no rating from 0 to {MAX_RATING} matches")
    return RatingRange(low, high)


@dataclass(frozen=True)
class CurationFilter:
    album: int | None = None  # an album's id (albums.find_album reads a name)
    tag: str | None = None  # the tag or any below it
    rating: RatingRange | None = None
    favorite: bool | None = None
    rejected: bool | None = None

    def __post_init__(self) -> None:
        if self.tag is not None:
            normalise_tag(self.tag)  # InvalidTag before any query

    def conditions(self) -> list[ColumnElement[bool]]:
        found: list[ColumnElement[bool]] = []
        if self.album is not None:
            found.append(in_album(self.album))
        if self.tag is not None:
            found.append(tagged(self.tag))
        if self.rating is not None:
            found.append(_rated(self.rating))
        for name, wanted in (("favorite", self.favorite), ("rejected", self.rejected)):
            if wanted is not None:
                marked = _curated(asset_curation.c[name].is_(True))
                found.append(marked if wanted else ~marked)
        return found


def _curated(condition: ColumnElement[bool]) -> ColumnElement[bool]:
    return exists().where(asset_curation.c.asset_id == assets.c.id, condition)


def _rated(rating: RatingRange) -> ColumnElement[bool]:
    within = and_(asset_curation.c.rating >= rating.low, asset_curation.c.rating <= rating.high)
    if rating.low >= 1:
        return _curated(within)
    # Unrated assets may have no curation row: "not rated outside the range".
    return ~_curated(~within)


def curation_fields(session: Session, asset_ids: list[int]) -> dict[int, dict[str, Any]]:
    """For each asset: ``rating``, ``favorite``, ``rejected``, ``tags`` (spellings) and
    ``albums`` ({id, name}) — an asset never curated has 0, false, false, [], []."""
    marks: dict[int, tuple[int, bool, bool]] = {}
    for chunk in chunks(sorted(set(asset_ids))):
        query = select(
            asset_curation.c.asset_id,
            asset_curation.c.rating,
            asset_curation.c.favorite,
            asset_curation.c.rejected,
        ).where(asset_curation.c.asset_id.in_(chunk))
        marks.update({row[0]: (row[1], row[2], row[3]) for row in session.execute(query)})
    tagged_with = tags_of(session, asset_ids)
    in_albums = albums_of(session, asset_ids)
    fields: dict[int, dict[str, Any]] = {}
    for asset_id in asset_ids:
        rating, favorite, rejected = marks.get(asset_id, (0, False, False))
        fields[asset_id] = {
            "rating": rating,
            "favorite": bool(favorite),
            "rejected": bool(rejected),
            "tags": tagged_with.get(asset_id, []),
            "albums": in_albums.get(asset_id, []),
        }
    return fields


def curation_of(factory: sessionmaker[Session], asset_id: int) -> dict[str, Any]:
    """``curation_fields`` of one asset; ``AssetNotFound`` for no asset."""
    with read_session(factory) as session:
        checked_ids(session, [asset_id])
        return curation_fields(session, [asset_id])[asset_id]


def with_curation(session: Session, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` (asset rows with ``id``) each with its curation fields."""
    fields = curation_fields(session, [row["id"] for row in rows])
    for row in rows:
        row.update(fields[row["id"]])
    return rows
