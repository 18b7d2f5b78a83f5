"""Commands that make renditions and find near duplicates: ``render``, ``similar``."""

from __future__ import annotations

from typing import Annotated

import typer

from photo_pipeline.cli.common import (
    EXIT_REFUSED,
    JsonOption,
    WaitOption,
    app,
    err_console,
    library,
)
from photo_pipeline.cli.finish import finish_job
from photo_pipeline.cli.shown import shown


def _refuse(exc: ValueError) -> typer.Exit:
    err_console.print(f"[red]error[/] invalid_settings: {shown(exc)}", highlight=False)
    return typer.Exit(EXIT_REFUSED)


@app.command()
def render(
    force: Annotated[
        bool, typer.Option("--force", help="Render every asset again, even if up to date.")
    ] = False,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Make the thumbnails and previews that are missing or stale (settings changed)."""
    from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings

    lib = library()
    try:
        settings = render_settings(lib.settings)
    except ValueError as exc:
        raise _refuse(exc) from exc
    job = enqueue_render(lib.service, lib.settings.home, settings, force=force).job
    finish_job(job, wait=wait, as_json=as_json, what="assets rendered")


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
    from photo_pipeline.pipeline.near.similar import enqueue_similar

    lib = library()
    distance = lib.settings.near_distance if max_distance is None else max_distance
    try:
        job = enqueue_similar(lib.service, lib.settings.home, max_distance=distance).job
    except ValueError as exc:
        raise _refuse(exc) from exc
    finish_job(job, wait=wait, as_json=as_json, what="assets hashed")
