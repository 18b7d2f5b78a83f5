"""``/api/dedupe/plan``: the dry run of a dedupe, exactly as the CLI's
``dedupe --dry-run --json`` prints it: what would move to the quarantine, the space
reclaimed, and why each keeper won."""

from __future__ import annotations

import re
from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.dedupe import plan_dedupe

router = APIRouter(tags=["dedupe"], responses=PROBLEM_RESPONSES)
_DAY = r"^\d{4}-\d{2}-\d{2}$"


class DedupePlan(BaseModel):
    model_config = ConfigDict(extra="allow")

    near: bool
    scope: dict[str, Any]
    summary: dict[str, Any]
    groups: list[dict[str, Any]]
    truncated: bool


@router.get("/api/dedupe/plan", response_model=DedupePlan)
def plan(
    request: Request,
    near: bool = False,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 200,
    source: Annotated[
        list[str] | None,
        Query(
            max_length=100,
            description="Registered sources by id or folder (repeatable; none: all).",
        ),
    ] = None,
    since: Annotated[str | None, Query(pattern=_DAY, description="Taken on or after.")] = None,
    until: Annotated[str | None, Query(pattern=_DAY, description="Taken on or before.")] = None,
) -> dict[str, Any]:
    """The plan (the first ``limit`` groups and the summary of all), touching nothing;
    ``near`` adds near-duplicate groups with a recorded decision (and counts those
    without one, ``summary.near_undecided``); ``source``/``since``/``until`` limit it."""
    for named in source or ():
        if len(named) > 4096 or not re.match(PLAIN_TEXT, named):
            raise ApiError(422, "invalid_source", "a source is an id or a folder path")
    return plan_dedupe(
        api_state(request).library.sessions,
        near=near,
        limit=limit,
        sources=source or (),
        since=since,
        until=until,
    )
