"""Commands over capture times and places: timeshift (and its undo), places backfill."""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    ORIGINALS_PANEL,
    JsonOption,
    WaitOption,
    app,
    console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_job
from photo_pipeline.cli.shown import counted, shown


@app.command(rich_help_panel=ORIGINALS_PANEL)
def timeshift(
    camera: Annotated[
        str | None, typer.Option(help="Camera model, exactly as in `assets` (any case).")
    ] = None,
    asset: Annotated[
        list[int] | None,
        typer.Option(
            "--asset", metavar="ID", help="This asset (repeatable), as `assets --json` ids it."
        ),
    ] = None,
    by: Annotated[
        str | None, typer.Option(help="How far to move the clock: +2h15m, -1d, +30s …")
    ] = None,
    set_to: Annotated[
        str | None,
        typer.Option(
            "--set",
            metavar="WHEN",
            help="Give every chosen photo this local date and time (2019-06-14T10:00, or "
            "a date). The date becomes yours: trusted, no longer undated.",
        ),
    ] = None,
    since: Annotated[
        str | None, typer.Option(help="Only photos taken on or after (YYYY-MM-DD, local time).")
    ] = None,
    until: Annotated[
        str | None, typer.Option(help="Only photos taken on or before (YYYY-MM-DD, local time).")
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Show what would change; change nothing.")
    ] = False,
    undo: Annotated[
        str | None, typer.Option(help="Undo the timeshift job with this id instead.")
    ] = None,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Correct a camera's clock, or set the date of chosen photos, in the catalogue.

    --camera … --by … shifts a camera; --asset … --set … dates chosen photos.
    Originals are never rewritten."""
    from photo_pipeline.cli.progress import full_job_id
    from photo_pipeline.pipeline import timeshift as shifts

    lib = library()
    if undo is not None:
        if camera or asset or by or set_to or since or until or dry_run:
            raise shifts.InvalidShift(detail="--undo takes no other option than --wait/--json")
        job = shifts.start_undo(lib.service, full_job_id(lib.service, undo)).job
    else:
        chosen: dict[str, Any] = {
            "camera": camera,
            "asset_ids": asset or None,
            "by": by,
            "set_to": set_to,
            "since": since,
            "until": until,
        }
        if dry_run:
            _show_plan(shifts.plan_timeshift(lib.sessions, **chosen), as_json)
            return
        job = shifts.start_timeshift(lib.service, **chosen).job
    finish_job(job, wait=wait, as_json=as_json, what="assets")


@app.command()
def places(
    refresh: Annotated[
        bool,
        typer.Option(
            "--refresh",
            help="Work out the place of every photo with a position again (not its time), "
            "e.g. after an upgrade that names places differently.",
        ),
    ] = False,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Work out time zones and places of photos catalogued before they were known."""
    from photo_pipeline.pipeline.ingest import places as places_job

    lib = library()
    job = places_job.start_backfill(lib.service, refresh=refresh).job
    finish_job(job, wait=wait, as_json=as_json, what="assets")


def _show_plan(plan: dict[str, Any], as_json: bool) -> None:
    from photo_pipeline.media.camera_names import display_camera

    if as_json:
        print_json(plan)
        return
    table = Table("asset", "camera", "taken before", "taken after", "zone source", "note")
    for entry in plan["assets"]:
        table.add_row(
            str(entry["asset_id"]),
            shown(display_camera(entry["make"], entry["model"]) or ""),
            shown(entry["taken_local_before"]),
            shown(entry["taken_local_after"] or ""),
            shown(entry["tz_source"] or ""),
            shown(entry["error"] or ""),
        )
    if plan["assets"]:
        console.print(table)
    which = f"of {shown(repr(plan['camera']))}" if plan["camera"] is not None else "chosen"
    change = f"would get the date {plan['set']}" if plan["set"] else f"would move by {plan['by']}"
    console.print(
        f"dry run: {counted(plan['count'], 'photos')} {which} {shown(change)}", highlight=False
    )
