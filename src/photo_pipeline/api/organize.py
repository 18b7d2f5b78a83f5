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

_DAY = r"^\d{4}-\d{2}-\d{2}$"
TEMPLATE_HELP = (
    "The destination layout: fields in braces, {taken:%Y} (strftime of the local capture "
    "time), {make}, {model}, {ext}, {hash8}, {original_name}, {folder} (the file's folder "
    "in its source), {country}, {city}, {counter}. After '|' a fallback for an undated "
    "photo (only its file's mtime) or an unknown value: {taken:%Y|undated}, "
    "{taken:%Y-%m-%d|{folder}}; the default sends undated photos to undated/<folder>."
)


class Scoped(BaseModel):
    """What part of the library an organize or dedupe covers (all of it by default)."""

    model_config = ConfigDict(extra="forbid")

    sources: list[Annotated[str, Field(min_length=1, max_length=4096, pattern=PLAIN_TEXT)]] = Field(
        default_factory=list,
        max_length=100,
        description="Registered sources, by id or folder (none: every source).",
    )
    since: str | None = Field(
        default=None, pattern=_DAY, description="Photos taken on this local day or later."
    )
    until: str | None = Field(
        default=None, pattern=_DAY, description="Photos taken on this local day or before."
    )

    def scope(self) -> dict[str, Any]:
        return {"sources": self.sources, "since": self.since, "until": self.until}


class PlanRequest(Scoped):
    dest: str = Field(min_length=1, max_length=4096, description="Absolute destination folder.")
    template: str = Field(
        default=DEFAULT_TEMPLATE,
        min_length=1,
        max_length=1000,
        pattern=PLAIN_TEXT,
        description=TEMPLATE_HELP,
    )
    move: bool = False
    limit: Annotated[int, Field(ge=1, le=10_000)] = 50


class Plan(BaseModel):
    model_config = ConfigDict(extra="allow")

    destination: str
    template: str
    mode: str
    scope: dict[str, Any]
    summary: dict[str, Any]
    entries: list[dict[str, Any]]
    truncated: bool


@router.post("/api/organize/plan", response_model=Plan)
def plan(body: PlanRequest, request: Request) -> dict[str, Any]:
    """The plan (first ``limit`` entries and the summary of all), touching nothing."""
    lib = api_state(request).library
    dest = confined_path(lib, body.dest, "dest")
    return plan_organize(
        lib.sessions, dest, body.template, move=body.move, limit=body.limit, **body.scope()
    )
