"""Request and response bodies: the OpenAPI schema clients (and schemathesis) rely on."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.jobs.outcomes import Outcome, outcome, problems
from photo_pipeline.pipeline.job_words import ItemPlace

# Text a client sends (names, filters, keys): no control characters. PostgreSQL cannot
# store NUL, and none belongs in a camera, a template or a key.
PLAIN_TEXT = r"^[^\x00-\x1f\x7f]*$"
# Job ids are UUIDs, as the server makes them.
JOB_ID = r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$"


class JobRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: str = Field(
        max_length=64,
        pattern=PLAIN_TEXT,
        description="Job type, e.g. import, render, similar, organize, verify.",
    )
    params: dict[str, Any] = Field(default_factory=dict)


class Progress(BaseModel):
    total: int
    done: int
    by_state: dict[str, int]


class Job(BaseModel):
    id: str
    type: str
    state: str = Field(
        description="Where the job is in the coordinator's state machine: queued, running, "
        "cancelling, succeeded, failed, retry_queued, cancelled."
    )
    outcome: Outcome | None = Field(
        description="What a finished job came to (null while it may still run): "
        "succeeded, succeeded_with_problems (it ran to its end but items failed: a "
        "corrupt photo, a file verify found changed or missing; show it as needing "
        "attention, with `problems`), failed or cancelled.",
    )
    problems: int = Field(description="How many of its items failed (`?state=failed` lists them).")
    params: dict[str, Any]
    priority: int
    lock: str | None
    lock_words: str | None = Field(
        description="What the lock keeps to one job at a time, in words."
    )
    attempts: int
    max_attempts: int
    waiting_for: int = Field(description="Prerequisites that have not succeeded yet.")
    prerequisites: list[str]
    lease_owner: str | None
    lease_expires_at: datetime | None
    heartbeat_at: datetime | None
    run_after: datetime
    error_code: str | None
    error_message: str | None
    created_at: datetime
    updated_at: datetime
    started_at: datetime | None
    finished_at: datetime | None
    progress: Progress | None = None


class JobPage(BaseModel):
    jobs: list[Job]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next, older page.")
    last_event_seq: int = Field(
        description="The event log's newest sequence number before this page was read: "
        "stream with ?after= it to follow what happens next."
    )


class Item(BaseModel):
    id: int
    key: str = Field(description="The job's own name for the item (e.g. source id:path).")
    name: str = Field(description="The item's file name (or its key when it names no file).")
    folder: str | None = Field(description="The folder the file is in, when known.")
    state: str
    attempts: int
    error_code: str | None
    error_message: str | None
    advice: str | None = Field(description="What a person can do about the failure, when known.")
    updated_at: datetime


class ItemPage(BaseModel):
    items: list[Item]
    next_cursor: int | None


class Event(BaseModel):
    seq: int
    job_id: str
    type: str
    message: str | None
    data: dict[str, Any] | None
    created_at: datetime


class AccessToken(BaseModel):
    access_token: str
    expires_at: int = Field(description="Unix seconds.")


class Watcher(BaseModel):
    source_id: int
    path: str = Field(description="The watched source's folder")
    holder: str = Field(description="The watching process: host:pid:random")
    host: str
    pid: int
    mode: str = Field(description="inotify, or poll (a periodic cheap rescan)")
    reason: str | None = Field(description="Why poll, when it polls")
    pending: int = Field(description="Changed paths not yet handed to a scan")
    lag_seconds: float = Field(
        description="Seconds since the oldest change not yet handed to a scan; 0: caught up"
    )
    heartbeat_at: datetime


class Health(BaseModel):
    status: str = Field(description="ok, or degraded when the database or the worker is not")
    database: str = Field(description="ok or unavailable")
    worker: str = Field(
        description="The worker inside the server: ok, dead (its thread ended), or none"
    )
    version: str
    watchers: list[Watcher] = Field(
        default_factory=list,
        description="The live watchers of watched sources, in any process on any host",
    )


def job_out(
    job: dict[str, Any],
    prerequisites: list[str],
    progress: dict[str, Any] | None,
    lock_words: str | None = None,
) -> Job:
    by_state = progress["by_state"] if progress is not None else {}
    return Job(
        id=job["id"],
        type=job["job_type"],
        state=str(job["state"]),
        outcome=outcome(job["state"], by_state) if progress is not None else None,
        problems=problems(by_state),
        params=job["params"] or {},
        priority=job["priority"],
        lock=job["lock_key"],
        lock_words=lock_words,
        attempts=job["attempts"],
        max_attempts=job["max_attempts"],
        waiting_for=job["waiting_for"],
        prerequisites=prerequisites,
        lease_owner=job["lease_owner"],
        lease_expires_at=job["lease_expires_at"],
        heartbeat_at=job["heartbeat_at"],
        run_after=job["run_after"],
        error_code=job["error_code"],
        error_message=job["error_message"],
        created_at=job["created_at"],
        updated_at=job["updated_at"],
        started_at=job["started_at"],
        finished_at=job["finished_at"],
        progress=None if progress is None else Progress(**progress),
    )


def item_out(row: dict[str, Any], place: ItemPlace, advice: str | None) -> Item:
    return Item(
        id=row["id"],
        key=row["item_key"],
        name=place.name,
        folder=place.folder,
        state=str(row["state"]),
        attempts=row["attempt_count"],
        error_code=row["error_code"],
        error_message=row["error_message"],
        advice=advice,
        updated_at=row["updated_at"],
    )
