"""What every command shares: the Typer apps, the console, opening the library."""

from __future__ import annotations

import gc
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.console import Console

from photo_pipeline.config import Settings

if TYPE_CHECKING:
    from photo_pipeline.pipeline.library import Library

# The command modules import the database and pipeline layers where a command runs,
# not at the top: `--help` then starts without SQLAlchemy (tests/unit/cli/test_cli_startup.py).

# `--help` groups the commands: the everyday ones in Typer's default panel, then these.
CURATION_PANEL = "Curation"
ORIGINALS_PANEL = "Originals: organize, verify, deduplicate, redate"
JOBS_PANEL = "Jobs and workers"

app = typer.Typer(
    help="Self-hosted, durable photo-processing pipeline.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)
job_app = typer.Typer(help="Inspect and steer one job.", no_args_is_help=True)
app.add_typer(job_app, name="job", rich_help_panel=JOBS_PANEL)

# Piped output is read by programs and greps: Rich's default of 80 columns would wrap
# or crop ids there, so lines are as long as they need to be.
PIPED_WIDTH = 10_000
console = Console(width=None if sys.stdout.isatty() else PIPED_WIDTH)
err_console = Console(stderr=True, width=None if sys.stderr.isatty() else PIPED_WIDTH)

JsonOption = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]
WaitOption = Annotated[
    bool,
    typer.Option(
        "--wait", help="Run to the end with progress bars (in-process when no worker is running)."
    ),
]

# Exit codes (also in the README).
EXIT_OK = 0
EXIT_JOB_DID_NOT_SUCCEED = 1
EXIT_REFUSED = 2  # bad input or a refused request (lock held, invalid transition…)
EXIT_NOT_FOUND = 3
EXIT_DATABASE = 4
EXIT_FAILED_ITEMS = 5  # the waited-for jobs succeeded, but some of their items failed


@cache
def library() -> Library:
    """Open the configured library once per process (creating or upgrading it)."""
    from photo_pipeline.pipeline.library import open_library
    from photo_pipeline.pipeline.scheduled import seed_defaults

    settings = Settings.from_env()
    opened = open_library(settings)
    if settings.default_schedules:
        seed_defaults(opened.service)  # a new library's defaults; one read for any other
    return opened


def library_when_reachable() -> Library:
    """The library, once its database answers: a long-running process (``worker``,
    ``watch``) started before its database (a machine booting, a database
    restarting) waits for it, logging once."""
    import logging
    import random
    import time

    from photo_pipeline.db.errors import DatabaseUnavailable
    from photo_pipeline.jobs.runtime import RECONNECT

    attempt, rng = 0, random.Random()
    while True:
        try:
            return library()
        except DatabaseUnavailable as exc:
            if attempt == 0:
                logging.getLogger("photo_pipeline.cli").warning(
                    "database unavailable, waiting for it: %s", exc.detail
                )
            attempt += 1
            time.sleep(RECONNECT.delay(attempt, rng).total_seconds())  # a backoff, not a sync


def close_library() -> None:
    """Close the library if this process opened it (its next use opens it again)."""
    if library.cache_info().currsize:
        library().close()
        library.cache_clear()


@contextmanager
def loaded_code_frozen() -> Iterator[None]:
    """Keep what is loaded so far (modules, the open library) out of the cyclic
    garbage collector's way while a worker runs: it lives as long as the process, and
    every full collection walked all of it again (two such took 0.25 to 0.75 s of a
    48-photo `import --wait` on a loaded machine). Thawed after, for a process that
    goes on (the tests run commands in theirs)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def print_json(value: Any) -> None:
    typer.echo(json.dumps(value, default=str, indent=2))
