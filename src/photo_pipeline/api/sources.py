"""``/api/sources``: the registered source folders (which an organize or dedupe scope
names), and watching one or not (``photo-pipeline sources --watch/--unwatch``)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.ingest.sources import list_sources, set_watch

router = APIRouter(tags=["library"], responses=PROBLEM_RESPONSES)

SourceId = Annotated[int, Path(ge=1, le=2**62)]


class SourceWatcher(BaseModel):
    """The live watcher of a source (``/api/health`` lists them whole)."""

    host: str
    holder: str = Field(description="The watching process: host:pid:random")
    mode: str = Field(description="inotify, or poll (a periodic cheap rescan)")
    reason: str | None = Field(description="Why poll, when it polls")
    lag_seconds: float


class Source(BaseModel):
    id: int
    path: str
    files: int = Field(description="Files catalogued in it.")
    watch: bool = Field(description="Kept current by a watcher (serve or watch).")
    watcher: SourceWatcher | None = Field(description="The live watcher, while one holds it.")


class WatchBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    watch: bool


@router.get("/api/sources", response_model=list[Source])
def sources(request: Request) -> list[dict[str, Any]]:
    """Every registered source, in the order added."""
    return list_sources(api_state(request).library.service)


@router.put("/api/sources/{source_id}/watch", response_model=Source)
def watch(source_id: SourceId, body: WatchBody, request: Request) -> dict[str, Any]:
    """Watch the source from now on, or stop (idempotent): a running ``serve`` or
    ``watch`` takes it, or stops its watcher, within seconds."""
    service = api_state(request).library.service
    set_watch(service, [source_id], body.watch)
    [row] = [row for row in list_sources(service) if row["id"] == source_id]
    return row
