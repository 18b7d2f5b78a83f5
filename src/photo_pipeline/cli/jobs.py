"""Commands over jobs: list, show, events, cancel, retry, wait, prune."""

from __future__ import annotations

import json
import time
from datetime import timedelta
from typing import Annotated, Any

import typer
from rich.table import Column, Table

from photo_pipeline.cli.common import (
    JOBS_PANEL,
    JsonOption,
    app,
    console,
    job_app,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_jobs
from photo_pipeline.cli.shown import counted, shown
from photo_pipeline.cli.worker import ImportOption, load_handlers

JobId = Annotated[str, typer.Argument(help="The job's id, or any unique start of it.")]
# Failed items `job show` lists (--json too); more are counted.
SHOWN_FAILED = 100


@app.command()
def init(as_json: JsonOption = False) -> None:
    """Create the library (database and schema) or upgrade it to this version."""
    from sqlalchemy.engine import make_url

    lib = library()
    lib.settings.home.mkdir(parents=True, exist_ok=True)
    # A password in the URL stays out of terminals and logs.
    database = make_url(lib.settings.database_url).render_as_string(hide_password=True)
    if as_json:
        print_json({"home": str(lib.settings.home), "database_url": database})
    else:
        # The tag after the space: a home ending in a backslash must not escape it.
        console.print(f"library ready: [bold]{shown(lib.settings.home)} [/]({shown(database)})")


@app.command("jobs", rich_help_panel=JOBS_PANEL)
def list_jobs(
    state: Annotated[list[str] | None, typer.Option(help="Only jobs in this state.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the newest jobs."""
    from photo_pipeline.cli.job_words import outcome_markup
    from photo_pipeline.jobs.outcomes import problems

    service = library().service
    rows = service.list_jobs(states=state, limit=limit)
    counts = service.progress_of(job["id"] for job in rows)
    if as_json:
        print_json([_with_outcome(job, counts[job["id"]]) for job in rows])
        return
    if not rows:
        console.print("no jobs")
        return
    table = Table(Column("id", no_wrap=True), "type", "state", "attempts", "created", "error")
    for job in rows:
        by_state = counts[job["id"]]["by_state"]
        if job["state"] != "succeeded":
            error = shown(job["error_code"] or "")
        else:
            # A job that succeeded in the end keeps its last error for `job show`
            # (worker_died, say), but the listing does not call it an error; the
            # codes of its failed items are what it has to say.
            error = _problem_codes(service, job["id"]) if problems(by_state) else ""
        table.add_row(
            job["id"],
            job["job_type"],
            outcome_markup(job["state"], by_state),
            f"{job['attempts']}/{job['max_attempts']}",
            f"{job['created_at']:%Y-%m-%d %H:%M:%S}",
            error,
        )
    console.print(table)


def _with_outcome(job: dict[str, Any], progress: dict[str, Any]) -> dict[str, Any]:
    """A job's snapshot with its outcome and how many problems it has (``--json``)."""
    from photo_pipeline.jobs.outcomes import outcome, problems

    by_state = progress["by_state"]
    return {**job, "outcome": outcome(job["state"], by_state), "problems": problems(by_state)}


def _problem_codes(service: Any, job_id: str) -> str:
    """The codes of a job's failed items, as the listing's error column."""
    failed = service.items(job_id, states=["failed"], limit=100)
    codes = sorted({item["error_code"] or "failed" for item in failed})
    return shown(", ".join(codes))


def _job_or_exit(job_id: str) -> dict[str, Any]:
    from photo_pipeline.cli.progress import existing_job

    return existing_job(library().service, job_id)


@job_app.command("show")
def show(job_id: JobId, as_json: JsonOption = False) -> None:
    """A job, its progress and its failed items."""
    from photo_pipeline.cli.job_words import counts_words, in_folder, outcome_markup
    from photo_pipeline.pipeline import job_words

    service = library().service
    job = _job_or_exit(job_id)
    job_id = job["id"]
    progress = service.progress(job_id)
    failed = service.items(job_id, states=["failed"], limit=SHOWN_FAILED)
    places = job_words.item_places(
        service.session_factory, job["job_type"], (item["item_key"] for item in failed)
    )
    locks = job_words.lock_words(service.session_factory, [job["lock_key"]])
    if as_json:
        failed_items = [
            {
                **item,
                "name": places[item["item_key"]].name,
                "folder": places[item["item_key"]].folder,
                "advice": job_words.advice(
                    job["job_type"], item["error_code"], places[item["item_key"]]
                ),
            }
            for item in failed
        ]
        shown_job = _with_outcome(job, progress)
        print_json({**shown_job, "progress": progress, "failed_items": failed_items})
        return
    fields: list[tuple[str, str]] = [
        ("id", shown(job["id"])),
        ("job_type", shown(job["job_type"])),
        ("state", outcome_markup(job["state"], progress["by_state"])),
    ]
    for field in ("attempts", "max_attempts", "interruptions", "lease_owner"):
        fields.append((field, shown(job[field])))
    if job["lock_key"]:
        fields.append(("lock", shown(locks[job["lock_key"]])))
    for field in ("error_code", "error_message", "created_at", "started_at", "finished_at"):
        fields.append((field, shown(job[field])))
    fields.append(("items", shown(counts_words(progress))))
    for name, value in fields:
        console.print(f"[bold]{name:>13}[/] {value}", highlight=False)
    for item in failed:
        place = places[item["item_key"]]
        line = f"  failed {in_folder(place)}: {shown(item['error_code'])} "
        console.print(line + shown(item["error_message"] or ""), highlight=False, soft_wrap=True)
        todo = job_words.advice(job["job_type"], item["error_code"], place)
        if todo:
            console.print(f"    what to do: {shown(todo)}", highlight=False, soft_wrap=True)
    more = progress["by_state"].get("failed", 0) - len(failed)
    if more > 0:
        console.print(f"  and {more:,} more failed (--json lists them)", highlight=False)


@job_app.command("events")
def events(
    job_id: JobId,
    after: Annotated[int, typer.Option(help="Only events after this sequence number.")] = 0,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing until the job finishes.")
    ] = False,
    as_json: JsonOption = False,
) -> None:
    """A job's events in order; ``--follow`` keeps streaming until the job finishes.

    ``--json``: one JSON object per line."""
    from photo_pipeline.cli.job_words import event_words
    from photo_pipeline.jobs.states import FINISHED_STATES

    service = library().service
    job_id = _job_or_exit(job_id)["id"]
    cursor = after
    while True:
        batch = service.events_after(job_id, cursor)
        for event in batch:
            cursor = event["seq"]
            if as_json:
                typer.echo(json.dumps(event, default=str))  # JSON lines: one event each
            else:
                console.print(
                    f"{event['seq']:>6} {event['created_at']:%H:%M:%S} {event_words(event)}",
                    highlight=False,
                )
        if not follow:
            return
        if not batch and _job_or_exit(job_id)["state"] in FINISHED_STATES:
            return
        if not batch:
            time.sleep(0.5)  # polling interval of the follower, not synchronisation


@job_app.command("cancel")
def cancel(job_id: JobId, as_json: JsonOption = False) -> None:
    """Cancel a job: queued at once, running once its worker notices."""
    from photo_pipeline.pipeline import abandoned

    # abandoned.cancel: a job killed while it moved a file gives the file back at once.
    job = abandoned.cancel(library().service, _job_or_exit(job_id)["id"])
    print_json(job) if as_json else console.print(f"job {job['id']} is {job['state']}")


@job_app.command("retry")
def retry(job_id: JobId, as_json: JsonOption = False) -> None:
    """Run a failed job again."""
    job = library().service.retry(_job_or_exit(job_id)["id"])
    print_json(job) if as_json else console.print(f"job {job['id']} is {job['state']}")


@job_app.command("wait")
def wait(
    job_ids: Annotated[list[str], typer.Argument(help="Jobs to wait for (ids or unique starts).")],
    embedded: Annotated[
        bool | None,
        typer.Option(
            "--embedded/--no-embedded",
            help="Run an in-process worker (default: when no live worker serves the jobs).",
        ),
    ] = None,
    import_modules: ImportOption = None,
    as_json: JsonOption = False,
) -> None:
    """Wait for jobs to finish, with live progress.

    Exits 1 unless all succeeded, 5 when they did but some items failed."""
    load_handlers(import_modules or [])
    jobs = [_job_or_exit(job_id) for job_id in job_ids]
    finish_jobs(jobs, wait=True, as_json=as_json, embedded=embedded)


@app.command(rich_help_panel=JOBS_PANEL)
def prune(
    older_than_days: Annotated[float, typer.Option(min=0, help="Age in days.")] = 30,
    as_json: JsonOption = False,
) -> None:
    """Delete finished jobs and their events older than the given age.

    Organize, timeshift and dedupe jobs are kept: their journals are what undo and
    purge read."""
    from photo_pipeline.pipeline.job_types import UNDOABLE

    counts = library().service.prune(
        older_than=timedelta(days=older_than_days), keep_types=UNDOABLE
    )
    if as_json:
        print_json(counts)
    else:
        jobs, events = counted(counts["jobs"], "jobs"), counted(counts["events"], "events")
        console.print(f"deleted {jobs} and {events}")
