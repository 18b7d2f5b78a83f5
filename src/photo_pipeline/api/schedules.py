"""``/api/schedules``: periodic jobs (jobs.schedules) — list, create, remove, pause
and resume. A bad cron expression, interval, time zone, job type or param is a 422
problem with its own code (``invalid_cron``, ``invalid_interval``,
``invalid_time_zone``, ``unknown_job_type``, ``invalid_params``, ``invalid_sample``);
pausing a paused schedule, or resuming a running one, answers as the first time, and
a create repeated with its ``Idempotency-Key`` returns the schedule it made."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Header, Request, Response
from fastapi import Path as PathParam
from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.jobs.schedules.book import Schedule, Schedules
from photo_pipeline.jobs.schedules.kinds import kinds
from photo_pipeline.jobs.schedules.timing import parse_interval
from photo_pipeline.pipeline import scheduled  # noqa: F401  (registers the job types)

router = APIRouter(prefix="/api/schedules", tags=["schedules"], responses=PROBLEM_RESPONSES)

ScheduleId = Annotated[int, PathParam(ge=1, le=2**63 - 1, description="A schedule's id.")]


class ScheduleRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")

    job_type: str = Field(max_length=100, pattern=PLAIN_TEXT, examples=["rescan", "verify"])
    cron: str | None = Field(
        default=None, max_length=200, pattern=PLAIN_TEXT, examples=["0 3 * * *"]
    )
    every: str | None = Field(default=None, max_length=40, pattern=PLAIN_TEXT, examples=["6h"])
    params: dict[str, Any] = Field(default_factory=dict, examples=[{"sample": 25}])
    time_zone: str | None = Field(
        default=None,
        max_length=64,
        pattern=PLAIN_TEXT,
        description="IANA zone the cron expression is read in; default: the server's.",
        examples=["Europe/Paris"],
    )
    paused: bool = False


class LastJob(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: str
    state: str | None = Field(description="None: the job was pruned since.")
    error_code: str | None = None
    error_message: str | None = None
    created_at: datetime | None = None
    finished_at: datetime | None = None


class ScheduleOut(BaseModel):
    id: int
    job_type: str
    params: dict[str, Any]
    cron: str | None
    every: str | None
    every_seconds: int | None
    time_zone: str
    paused: bool
    created_at: datetime
    next_run: datetime | None = Field(description="None while paused; now when due.")
    last_tick: datetime | None
    last_job: LastJob | None
    skipped_ticks: int = Field(description="Ticks not run: the previous job still active…")
    last_skipped_at: datetime | None
    last_skip_reason: str | None


class SchedulableType(BaseModel):
    job_type: str
    description: str


class ScheduleList(BaseModel):
    schedules: list[ScheduleOut]
    job_types: list[SchedulableType]


def _book(request: Request) -> Schedules:
    return Schedules(api_state(request).library.service)


def _out(row: Schedule) -> ScheduleOut:
    return ScheduleOut.model_validate(row)


@router.get("", response_model=ScheduleList)
def list_schedules(request: Request) -> ScheduleList:
    """Every schedule, with its next run, last run and the last job's state; and the
    job types a schedule may queue."""
    return ScheduleList(
        schedules=[_out(row) for row in _book(request).list()],
        job_types=[
            SchedulableType(job_type=k.job_type, description=k.description) for k in kinds.all()
        ],
    )


@router.post(
    "",
    status_code=201,
    response_model=ScheduleOut,
    responses={200: {"model": ScheduleOut, "description": "A replay: the schedule it made."}},
)
def create_schedule(
    body: ScheduleRequest,
    request: Request,
    response: Response,
    idempotency_key: Annotated[
        str | None,
        Header(
            alias="Idempotency-Key",
            min_length=1,
            max_length=200,
            pattern=PLAIN_TEXT,
            description="Repeat the request safely: the same key and body return the same "
            "schedule (200); another body is 409 idempotency_conflict.",
        ),
    ] = None,
) -> ScheduleOut:
    """Add a schedule: ``cron`` (read in ``time_zone``) or ``every`` (``6h``, ``30m``)."""
    every = None if body.every is None else parse_interval(body.every)
    schedule, created = _book(request).submit(
        body.job_type,
        body.params,
        cron=body.cron,
        every=every,
        time_zone=body.time_zone,
        paused=body.paused,
        idempotency_key=idempotency_key,
    )
    if not created:
        response.status_code = 200
    return _out(schedule)


@router.get("/{schedule_id}", response_model=ScheduleOut)
def get_schedule(schedule_id: ScheduleId, request: Request) -> ScheduleOut:
    return _out(_book(request).get(schedule_id))


@router.delete("/{schedule_id}", status_code=204, response_class=Response)
def delete_schedule(schedule_id: ScheduleId, request: Request) -> Response:
    """Remove a schedule; the jobs it queued stay. A schedule already gone is 404."""
    _book(request).remove(schedule_id)
    return Response(status_code=204)


@router.post("/{schedule_id}/pause", response_model=ScheduleOut)
def pause_schedule(schedule_id: ScheduleId, request: Request) -> ScheduleOut:
    """Stop queueing its jobs (idempotent)."""
    return _out(_book(request).pause(schedule_id))


@router.post("/{schedule_id}/resume", response_model=ScheduleOut)
def resume_schedule(schedule_id: ScheduleId, request: Request) -> ScheduleOut:
    """Queue its jobs again from the next tick; ticks missed while paused are not run
    (idempotent)."""
    return _out(_book(request).resume(schedule_id))
