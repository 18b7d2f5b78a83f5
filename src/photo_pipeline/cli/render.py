"""Commands that make renditions and find near duplicates: ``render``, ``similar``."""

from __future__ import annotations

from typing import Annotated

import typer

from photo_pipeline.cli.common import (
    EXIT_JOB_DID_NOT_SUCCEED,
    EXIT_REFUSED,
    JsonOption,
    WaitOption,
    app,
    console,
    err_console,
    library,
    print_json,
)
from photo_pipeline.cli.progress import wait_for_jobs
from photo_pipeline.jobs import JobState
from photo_pipeline.pipeline.render import enqueue_render, render_settings
from photo_pipeline.pipeline.similar import enqueue_similar


def _refuse(exc: ValueError) -> typer.Exit:
    err_console.print(f"[red]error[/] invalid_settings: {exc}", highlight=False)
    return typer.Exit(EXIT_REFUSED)


def _finish(job_id: str, wait: bool, as_json: bool, what: str) -> None:
    lib = library()
    job = lib.service.get(job_id)
    if wait:
        [job] = wait_for_jobs(lib, [job_id], embedded=None, show_progress=not as_json)
    if as_json:
        print_json(job)
    else:
        progress = lib.service.progress(job_id)
        console.print(
            f"{job['job_type']} job {job['id']}: {job['state']}, "
            f"{progress['done']}/{progress['total']} {what}, "
            f"{progress['by_state'].get('failed', 0)} failed"
        )
    if wait and job["state"] != JobState.SUCCEEDED:
        raise typer.Exit(EXIT_JOB_DID_NOT_SUCCEED)


@app.command()
def render(
    force: Annotated[
        bool, typer.Option("--force", help="Render every asset again, even if up to date.")
    ] = False,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Make the thumbnails and previews that are missing or stale (settings changed)."""
    lib = library()
    try:
        settings = render_settings(lib.settings)
    except ValueError as exc:
        raise _refuse(exc) from exc
    job = enqueue_render(lib.service, lib.settings.home, settings, force=force).job
    _finish(job["id"], wait, as_json, "assets rendered")


@app.command()
def similar(
    max_distance: Annotated[
        int | None,
        typer.Option(
            min=0, max=32, help="Max differing bits of 64 [default: PHOTO_PIPELINE_NEAR_DISTANCE]."
        ),
    ] = None,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Hash the thumbnails and group near duplicates (see `duplicates --near`)."""
    lib = library()
    distance = lib.settings.near_distance if max_distance is None else max_distance
    try:
        job = enqueue_similar(lib.service, lib.settings.home, max_distance=distance).job
    except ValueError as exc:
        raise _refuse(exc) from exc
    _finish(job["id"], wait, as_json, "assets hashed")
