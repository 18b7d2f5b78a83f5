"""``/api/timeline``: the library's capture days with their counts, for the timeline's
day headings, placeholder heights and date scrubber (``pipeline.library.timeline``).
The filters are ``/api/assets``'s (and ``q``, ``/api/search``'s words); a day's assets
are then read with ``/api/assets?sort=taken-desc&taken_from=…&taken_to=…``."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, Field

from photo_pipeline.api.listing_filters import ListingFilter
from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.library.search import MAX_LENGTH, parse
from photo_pipeline.pipeline.library.timeline import timeline

router = APIRouter(tags=["library"], responses=PROBLEM_RESPONSES)


class TimelineDay(BaseModel):
    day: str = Field(description="A capture day, YYYY-MM-DD (local calendar).")
    count: int = Field(description="Assets taken that day.")


class Timeline(BaseModel):
    days: list[TimelineDay] = Field(description="The days with assets, in the order asked.")
    total: int = Field(description="Their sum.")
    from_summary: bool = Field(
        description="Read from a summary kept per day (no filter, a range of days, one "
        "camera or one place): rows per day whatever the library's size. Other filters' "
        "days are counted from the matching assets."
    )


@router.get("/api/timeline", response_model=Timeline)
def get_timeline(
    request: Request,
    listing: ListingFilter,
    q: Annotated[
        str | None,
        Query(max_length=MAX_LENGTH, pattern=PLAIN_TEXT, description="Words, as /api/search."),
    ] = None,
    order: Annotated[
        Literal["newest", "oldest"], Query(description="newest (the default) or oldest first.")
    ] = "newest",
) -> Timeline:
    """Every capture day with assets the filters match and how many, newest first (or
    ``order=oldest``); months and years are the sums of their days. 404
    ``album_not_found``, 422 ``invalid_rating`` / ``invalid_search`` as the listings."""
    where = parse(q, listing) if q is not None and q.strip() else listing
    found = timeline(api_state(request).library.sessions, where, newest_first=order == "newest")
    return Timeline(
        days=[TimelineDay(day=day, count=count) for day, count in found.days],
        total=found.total,
        from_summary=found.from_summary,
    )
