"""The filters every listing of assets takes as query parameters: ``/api/assets``,
``/api/search`` (beside its words) and ``/api/timeline`` (whose day counts are then
what the listing pages). One FastAPI dependency, so that the three cannot drift apart."""

from __future__ import annotations

from datetime import date
from typing import Annotated, Literal

from fastapi import Depends, Query, Request

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import ApiError
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.curation import CurationFilter, find_album, parse_rating_range
from photo_pipeline.pipeline.faces.people import find_person
from photo_pipeline.pipeline.library.browse import AssetFilter

Day = Annotated[
    str | None,
    Query(pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$", description="A capture day, YYYY-MM-DD."),
]


def day_of(name: str, value: str | None) -> date | None:
    if value is None:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        raise ApiError(422, "invalid_request", f"{name}: {value!r} is not a date") from None


def listing_filter(
    request: Request,
    taken_from: Day = None,
    taken_to: Day = None,
    camera: Annotated[str | None, Query(max_length=200, pattern=PLAIN_TEXT)] = None,
    has_gps: bool | None = None,
    duplicates: Literal["exact", "near"] | None = None,
    place: Annotated[str | None, Query(max_length=200, pattern=PLAIN_TEXT)] = None,
    asset_type: Annotated[
        Literal["photo", "video", "live"] | None,
        Query(alias="type", description="photo, video, or live (Live and Motion Photos)."),
    ] = None,
    album: Annotated[int | None, Query(ge=1, le=2**62, description="In this album.")] = None,
    tag: Annotated[
        str | None,
        Query(max_length=500, pattern=PLAIN_TEXT, description="The tag or one below it."),
    ] = None,
    rating: Annotated[
        str | None,
        Query(max_length=16, description="4, >=4, >3, <=2, <2 or 2-4 (0: unrated)."),
    ] = None,
    favorite: bool | None = None,
    rejected: bool | None = None,
    person: Annotated[
        int | None, Query(ge=1, le=2**62, description="With a face of this person.")
    ] = None,
) -> AssetFilter:
    """The listing's filters; 404 ``album_not_found`` / ``person_not_found``, 422
    ``invalid_request`` (a day that is no date) or ``invalid_rating`` for one that
    names nothing."""
    sessions = api_state(request).library.sessions
    if album is not None:
        find_album(sessions, album)
    curation = CurationFilter(
        album=album,
        tag=tag,
        rating=parse_rating_range(rating) if rating is not None else None,
        favorite=favorite,
        rejected=rejected,
    )
    return AssetFilter(
        day_of("taken_from", taken_from),
        day_of("taken_to", taken_to),
        camera,
        has_gps,
        duplicates,
        place,
        asset_type,
        curation,
        person=None if person is None else find_person(sessions, person),
    )


ListingFilter = Annotated[AssetFilter, Depends(listing_filter)]
