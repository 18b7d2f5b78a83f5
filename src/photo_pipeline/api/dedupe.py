"""``/api/dedupe/plan``: the dry run of a dedupe, exactly as the CLI's
``dedupe --dry-run --json`` prints it: what would move to the quarantine, the space
reclaimed, and why each keeper won."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Request
from pydantic import BaseModel, ConfigDict

from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.dedupe import plan_dedupe

router = APIRouter(tags=["dedupe"], responses=PROBLEM_RESPONSES)


class DedupePlan(BaseModel):
    model_config = ConfigDict(extra="allow")

    near: bool
    summary: dict[str, Any]
    groups: list[dict[str, Any]]
    truncated: bool


@router.get("/api/dedupe/plan", response_model=DedupePlan)
def plan(
    request: Request,
    near: bool = False,
    limit: Annotated[int, Query(ge=1, le=10_000)] = 200,
) -> dict[str, Any]:
    """The plan (the first ``limit`` groups and the summary of all), touching nothing;
    ``near`` adds near-duplicate groups with a recorded decision."""
    return plan_dedupe(api_state(request).library.sessions, near=near, limit=limit)
