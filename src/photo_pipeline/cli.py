"""The ``photo-pipeline`` command line."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from photo_pipeline.config import Settings
from photo_pipeline.db import open_database
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import JobService

app = typer.Typer(help="Self-hosted, durable photo-processing pipeline.", no_args_is_help=True)
console = Console()

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


def _service() -> JobService:
    return JobService(open_database(Settings.from_env().database_url))


def _print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2))


@app.command()
def init() -> None:
    """Create the library (database and schema) or upgrade it to this version."""
    settings = Settings.from_env()
    settings.home.mkdir(parents=True, exist_ok=True)
    open_database(settings.database_url)
    console.print(f"library ready: [bold]{settings.home}[/] (database {settings.database_url})")


@app.command("jobs")
def list_jobs(
    state: Annotated[list[str] | None, typer.Option(help="Only jobs in this state.")] = None,
    limit: Annotated[int, typer.Option(min=1, max=10_000)] = 50,
    as_json: JsonOption = False,
) -> None:
    """List the newest jobs."""
    rows = _service().list_jobs(states=state, limit=limit)
    if as_json:
        _print_json(rows)
        return
    table = Table("id", "type", "state", "attempts", "created", "error")
    for job in rows:
        table.add_row(
            job["id"],
            job["job_type"],
            job["state"],
            f"{job['attempts']}/{job['max_attempts']}",
            job["created_at"].strftime("%Y-%m-%d %H:%M:%S"),
            job["error_code"] or "",
        )
    console.print(table if rows else "no jobs")


@app.command()
def prune(
    older_than_days: Annotated[float, typer.Option(min=0, help="Age in days.")] = 30,
    as_json: JsonOption = False,
) -> None:
    """Delete finished jobs and their events older than the given age."""
    counts = _service().prune(older_than=timedelta(days=older_than_days))
    if as_json:
        _print_json(counts)
    else:
        console.print(f"deleted {counts['jobs']} jobs and {counts['events']} events")


def main() -> None:
    try:
        app()
    except PhotoPipelineError as exc:
        console.print(f"[red]error[/] {exc.code}: {exc.detail}")
        raise SystemExit(2) from exc
