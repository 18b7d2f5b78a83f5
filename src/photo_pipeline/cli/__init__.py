"""The ``photo-pipeline`` command line (Typer + Rich)."""

from __future__ import annotations

import sys

from photo_pipeline.cli import (  # noqa: F401  (registers the commands)
    dedupe,
    jobs,
    library,
    organize,
    places,
    render,
    serve,
    worker,
)
from photo_pipeline.cli.common import (
    EXIT_DATABASE,
    EXIT_NOT_FOUND,
    EXIT_REFUSED,
    app,
    err_console,
)
from photo_pipeline.errors import PhotoPipelineError

__all__ = ["app", "main"]


def main() -> None:
    """Console entry point: domain errors become one line and a meaningful exit code."""
    try:
        app()
    except PhotoPipelineError as exc:
        from photo_pipeline.db.errors import DatabaseUnavailable
        from photo_pipeline.jobs.errors import JobNotFound

        err_console.print(
            f"[red]error[/] {exc.code}: {exc.detail}", highlight=False, soft_wrap=True
        )
        if isinstance(exc, JobNotFound):
            sys.exit(EXIT_NOT_FOUND)
        if isinstance(exc, DatabaseUnavailable):
            sys.exit(EXIT_DATABASE)
        sys.exit(EXIT_REFUSED)
