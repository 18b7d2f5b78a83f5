"""API job types for the HTTP tests: they start the worker tests' job types."""

from __future__ import annotations

from pydantic import BaseModel, Field

from photo_pipeline.api.job_types import confined_path, job_type
from photo_pipeline.jobs import Enqueued
from photo_pipeline.pipeline.library import Library
from tests.support import worker_handlers  # noqa: F401  (registers the handlers)


class RecordParams(BaseModel):
    log: str
    items: list[str] = Field(default_factory=list, max_length=10_000)
    item_seconds: float = Field(default=0, ge=0, le=1)
    lock: str | None = None


@job_type("test.record", RecordParams, "Records each item in a log (tests only).")
def start_record(lib: Library, params: RecordParams, key: str | None) -> Enqueued:
    log = confined_path(lib, params.log, "params.log")
    return lib.service.submit(
        "test.record",
        items=params.items,
        params={"log": str(log), "item_seconds": params.item_seconds},
        lock=params.lock,
        idempotency_key=key,
    )
