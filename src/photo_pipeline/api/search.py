"""``/api/search``: the library's search box. What was typed is read into the
listing's filters (``pipeline.library.search``), on top of the listing's own filters
given beside it; the answer is a page of ``/api/assets``, in its orders, with its
cursors."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request

from photo_pipeline.api.library import AssetPage, asset_page_response
from photo_pipeline.api.listing_filters import ListingFilter
from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.pipeline.library.search import MAX_LENGTH, parse

router = APIRouter(tags=["library"], responses=PROBLEM_RESPONSES)


@router.get("/api/search", response_model=AssetPage)
def search_assets(
    request: Request,
    q: Annotated[
        str,
        Query(
            max_length=MAX_LENGTH,
            pattern=PLAIN_TEXT,
            description="Words of file names, camera, lens or place (each a prefix: "
            '"pari" finds Paris), date words ("2019", "june 2019", "2019-06-14", '
            '"14 june 2019") and kinds (photo, video, live), all of which must match.',
        ),
    ],
    listing: ListingFilter,
    cursor: Annotated[str | None, Query(max_length=200, pattern=r"^[A-Za-z0-9_-]*={0,2}$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    sort: Literal["taken", "taken-desc", "taken-utc", "added"] = "taken-utc",
) -> AssetPage:
    """Assets matching a search (and the ``/api/assets`` filters given with it), paged
    as ``/api/assets`` pages: pass ``next_cursor`` with the same ``q``. 422
    ``invalid_rating`` for a ``rating:…`` that names no rating from 0 to 5; 422
    ``invalid_search`` for a search that cannot be read (two kinds at once, more than 16
    words)."""
    where = parse(q, listing)
    return asset_page_response(request, where, cursor=cursor, limit=limit, sort=sort)
