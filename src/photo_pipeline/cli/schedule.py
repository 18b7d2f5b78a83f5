"""``schedule``: periodic jobs — add, list, pause, resume, remove (jobs.schedules).

Every worker (``worker``, ``serve``'s) queues the jobs of due ticks; the database
makes each tick queue one job, however many workers run."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Any
from zoneinfo import ZoneInfo

import typer
from rich.table import Column, Table

from photo_pipeline.cli.common import JOBS_PANEL, JsonOption, app, console, library, print_json
from photo_pipeline.cli.shown import shown

if TYPE_CHECKING:
    from photo_pipeline.jobs.schedules.book import Schedule, Schedules

schedule_app = typer.Typer(help="Periodic jobs: a cron expression or an interval.")
app.add_typer(schedule_app, name="schedule", rich_help_panel=JOBS_PANEL)

ScheduleId = Annotated[int, typer.Argument(help="The schedule's id (see `schedule list`).")]


def _book() -> Schedules:
    from photo_pipeline.jobs.schedules.book import Schedules
    from photo_pipeline.pipeline import scheduled  # noqa: F401  (registers the job types)

    return Schedules(library().service)


def parse_params(pairs: list[str]) -> dict[str, str]:
    params: dict[str, str] = {}
    for pair in pairs:
        name, equals, value = pair.partition("=")
        if not equals or not name.strip():
            raise typer.BadParameter(f"{pair!r}: a param is NAME=VALUE", param_hint="--param")
        params[name.strip()] = value
    return params


@schedule_app.command("add")
def add(
    job_type: Annotated[str, typer.Argument(help="What to queue, e.g. rescan, verify.")],
    cron: Annotated[
        str | None, typer.Option(help='A cron expression, e.g. "0 3 * * *" (03:00 daily).')
    ] = None,
    every: Annotated[str | None, typer.Option(help="An interval, e.g. 6h, 30m, 1d.")] = None,
    param: Annotated[
        list[str] | None, typer.Option(help="A param of the job, NAME=VALUE (repeatable).")
    ] = None,
    tz: Annotated[
        str | None,
        typer.Option(
            help="IANA time zone the cron expression is read in (default: this machine's)."
        ),
    ] = None,
    paused: Annotated[bool, typer.Option("--paused", help="Add it paused.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Add a schedule: TYPE at each tick of --cron (in --tz) or --every."""
    from photo_pipeline.jobs.schedules.timing import parse_interval

    if (cron is None) == (every is None):
        raise typer.BadParameter("give --cron or --every (one of the two)")
    added = _book().add(
        job_type,
        parse_params(param or []),
        cron=cron,
        every=None if every is None else parse_interval(every),
        time_zone=tz,
        paused=paused,
    )
    if as_json:
        print_json(added)
        return
    console.print(
        f"schedule {added['id']}: {shown(added['job_type'])} {_when(added)}, "
        f"next run {_at(added['next_run'], added)}",
        highlight=False,
    )


@schedule_app.command("list")
def list_schedules(as_json: JsonOption = False) -> None:
    """The schedules: when each runs, its last run and how that job ended."""
    rows = _book().list()
    if as_json:
        print_json(rows)
        return
    if not rows:
        console.print("no schedules")
        return
    table = Table(
        Column("id", no_wrap=True),
        "type",
        "params",
        "when",
        "next run",
        "last run",
        "last job",
        "skipped",
    )
    for row in rows:
        job = row["last_job"]
        skipped = str(row["skipped_ticks"])
        if row["last_skip_reason"]:
            skipped += f" (last: {shown(row['last_skip_reason'])})"
        table.add_row(
            str(row["id"]),
            shown(row["job_type"]),
            shown(" ".join(f"{k}={v}" for k, v in row["params"].items())),
            _when(row),
            "paused" if row["paused"] else _at(row["next_run"], row),
            _at(job.get("created_at") if job else None, row),
            _outcome(job),
            skipped,
        )
    console.print(table)


@schedule_app.command("remove")
def remove(schedule_id: ScheduleId) -> None:
    """Remove a schedule (the jobs it queued stay)."""
    _book().remove(schedule_id)
    console.print(f"schedule {schedule_id} removed")


@schedule_app.command("pause")
def pause(schedule_id: ScheduleId, as_json: JsonOption = False) -> None:
    """Stop queueing its jobs until resumed."""
    _show_one(_book().pause(schedule_id), as_json)


@schedule_app.command("resume")
def resume(schedule_id: ScheduleId, as_json: JsonOption = False) -> None:
    """Queue its jobs again from its next tick (ticks missed while paused are not run)."""
    _show_one(_book().resume(schedule_id), as_json)


def _show_one(row: Schedule, as_json: bool) -> None:
    if as_json:
        print_json(row)
        return
    state = "paused" if row["paused"] else f"next run {_at(row['next_run'], row)}"
    console.print(f"schedule {row['id']}: {shown(row['job_type'])} {_when(row)}, {state}")


def _when(row: Schedule) -> str:
    if row["cron"] is not None:
        return f"cron {shown(row['cron'])} ({shown(row['time_zone'])})"
    return f"every {row['every']}"


def _at(moment: datetime | None, row: Schedule) -> str:
    if moment is None:
        return "-"
    return f"{moment.astimezone(ZoneInfo(row['time_zone'])):%Y-%m-%d %H:%M %Z}"


def _outcome(job: dict[str, Any] | None) -> str:
    if job is None:
        return "-"
    state = job.get("outcome") or job.get("state") or "pruned"
    error = job.get("error_code")
    return f"{job['id'][:8]} {state}" + (f" ({shown(error)})" if error else "")
