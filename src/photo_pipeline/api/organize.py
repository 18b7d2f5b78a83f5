"""``/api/organize/plan``: the dry run of an organize, exactly as the CLI's
``organize --dry-run --json`` prints it, for a live preview while a template is typed."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.job_types import confined_path
from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.organize import DEFAULT_TEMPLATE, plan_organize

router = APIRouter(tags=["organize"], responses=PROBLEM_RESPONSES)


class PlanRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    dest: str = Field(min_length=1, max_length=4096, description="Absolute destination folder.")
    template: str = Field(
        default=DEFAULT_TEMPLATE, min_length=1, max_length=1000, pattern=PLAIN_TEXT
    )
    move: bool = False
    limit: Annotated[int, Field(ge=1, le=10_000)] = 50


class Plan(BaseModel):
    model_config = ConfigDict(extra="allow")

    destination: str
    template: str
    mode: str
    summary: dict[str, Any]
    entries: list[dict[str, Any]]
    truncated: bool


@router.post("/api/organize/plan", response_model=Plan)
def plan(body: PlanRequest, request: Request) -> dict[str, Any]:
    """The plan (first ``limit`` entries and the summary of all), touching nothing."""
    lib = api_state(request).library
    dest = confined_path(lib, body.dest, "dest")
    return plan_organize(lib.sessions, dest, body.template, move=body.move, limit=body.limit)
