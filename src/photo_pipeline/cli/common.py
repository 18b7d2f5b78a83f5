"""What every command shares: the Typer apps, the console, opening the library."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any

import typer
from rich.console import Console
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.config import Settings
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService, RetryPolicy
from photo_pipeline.jobs.workers import WorkerRegistry

app = typer.Typer(
    help="Self-hosted, durable photo-processing pipeline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
job_app = typer.Typer(help="Inspect and steer one job.", no_args_is_help=True)
app.add_typer(job_app, name="job")

console = Console()
err_console = Console(stderr=True)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]

# Exit codes (also in the README).
EXIT_OK = 0
EXIT_JOB_DID_NOT_SUCCEED = 1
EXIT_REFUSED = 2  # bad input or a refused request (lock held, invalid transition…)
EXIT_NOT_FOUND = 3
EXIT_DATABASE = 4


@dataclass(frozen=True)
class Library:
    settings: Settings
    sessions: sessionmaker[Session]
    service: JobService
    workers: WorkerRegistry

    def close(self) -> None:
        self.sessions.kw["bind"].dispose()


@cache
def library() -> Library:
    """Open the configured library once per process (creating or upgrading it)."""
    settings = Settings.from_env()
    factory = open_database(settings.database_url)
    policy = RetryPolicy(settings.retry_base_seconds, settings.retry_max_seconds)
    return Library(
        settings, factory, JobService(factory, retry_policy=policy), WorkerRegistry(factory)
    )


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2))
