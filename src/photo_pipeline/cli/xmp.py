"""``xmp write`` and ``xmp undo``: curation into XMP sidecars (pipeline.xmp). Curation
commands queue the writer themselves; ``xmp write`` queues it for what still waits
(a change made while an undo ran, say) and ``--wait`` runs it here when no worker does."""

from __future__ import annotations

from typing import Annotated

import typer

from photo_pipeline.cli.common import (
    CURATION_PANEL,
    JsonOption,
    WaitOption,
    app,
    console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_job

xmp_app = typer.Typer(
    help="Curation in XMP sidecars: written after each change, undoable.", no_args_is_help=True
)
app.add_typer(xmp_app, name="xmp", rich_help_panel=CURATION_PANEL)


@xmp_app.command("write")
def xmp_write(wait: WaitOption = False, as_json: JsonOption = False) -> None:
    """Write the curation changes not in the sidecars yet.

    Joins the writer if one is queued or running."""
    from photo_pipeline.pipeline.xmp import request_write

    lib = library()
    queued = request_write(lib.service)
    if queued is None:
        if as_json:
            print_json({"job": None})
        else:
            console.print("nothing to write: every sidecar holds the catalogue's curation")
        return
    finish_job(queued.job, wait=wait, as_json=as_json, what="sidecars")


@xmp_app.command("undo")
def xmp_undo(
    job_id: Annotated[str, typer.Argument(metavar="JOB_ID", help="An xmp_write job.")],
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Put back the sidecars an xmp_write job wrote, exactly as they were.

    One changed since by another program is left alone, and said; the catalogue then
    holds what they say."""
    from photo_pipeline.cli.progress import full_job_id
    from photo_pipeline.pipeline.xmp import start_undo

    lib = library()
    job = start_undo(lib.service, full_job_id(lib.service, job_id)).job
    finish_job(job, wait=wait, as_json=as_json, what="sidecars")
