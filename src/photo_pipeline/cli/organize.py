"""Commands that touch originals: organize (and its undo) and verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    EXIT_REFUSED,
    JsonOption,
    WaitOption,
    app,
    console,
    err_console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_job
from photo_pipeline.cli.shown import shown
from photo_pipeline.pipeline.organize.template import DEFAULT_TEMPLATE  # no database: light

_SHOWN = 40


@app.command()
def organize(
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Destination folder of the layout.")
    ] = None,
    template: Annotated[
        str, typer.Option(help="Layout of the destination; fields in {braces}.")
    ] = DEFAULT_TEMPLATE,
    move: Annotated[
        bool, typer.Option("--move", help="Move originals (default: copy them).")
    ] = False,
    keep_duplicates: Annotated[
        bool,
        typer.Option(
            "--keep-duplicates",
            help="Place every copy of one content (default: the first only).",
        ),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan; touch nothing.")
    ] = False,
    undo: Annotated[
        str | None,
        typer.Option("--undo", metavar="JOB_ID", help="Reverse an organize job."),
    ] = None,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Copy or move originals into a dated layout (collision-safe, resumable, undoable)."""
    from photo_pipeline.cli.progress import full_job_id
    from photo_pipeline.pipeline import organize as organizing

    lib = library()
    if undo is not None and dry_run:
        err_console.print("[red]error[/] invalid_option: --undo has no --dry-run; see `job show`")
        raise typer.Exit(EXIT_REFUSED)
    if undo is not None:
        undo = full_job_id(lib.service, undo)
        job = organizing.start_undo(lib.service, undo).job
    else:
        if dest is None:
            err_console.print("[red]error[/] missing_destination: --dest DIR is required")
            raise typer.Exit(EXIT_REFUSED)
        if dry_run:
            plan = organizing.plan_organize(
                lib.sessions, dest, template, move=move, keep_duplicates=keep_duplicates
            )
            print_json(plan) if as_json else _print_plan(plan)
            return
        # Rerunning a command whose job is still active (it was killed) rejoins it.
        job = organizing.start_organize(
            lib.service, dest, template, move=move, rejoin=True, keep_duplicates=keep_duplicates
        ).job

    def show(final: dict[str, Any]) -> None:
        if undo is None:
            report = organizing.organize_report(lib.sessions, final["id"])
        else:
            report = organizing.organize_report(lib.sessions, undo, undo_job_id=final["id"])
        if as_json:
            print_json({"job": final, "report": report})
            return
        verb = "undo of " + undo if undo else final["job_type"]
        console.print(f"{verb} job {final['id']}: {final['state']}", highlight=False)
        if wait:
            _print_report(report)

    finish_job(job, wait=wait, as_json=as_json, show=show)


def _print_plan(plan: dict[str, Any]) -> None:
    summary = plan["summary"]
    console.print(
        # The tag after the space: a folder ending in a backslash must not escape it.
        f"{plan['mode']} into [bold]{shown(plan['destination'])} [/]with {shown(plan['template'])}",
        highlight=False,
    )
    table = Table("action", "source", f"in {shown(plan['destination'])}", "note")
    prefix = plan["destination"].rstrip("/") + "/"
    for entry in plan["entries"][:_SHOWN]:
        relative = entry["destination"].removeprefix(prefix)
        table.add_row(
            entry["action"],
            shown(entry["source"]),
            shown(relative),
            shown(entry["reason"] or ""),
        )
    if plan["entries"]:
        console.print(table)
    if len(plan["entries"]) > _SHOWN:
        console.print(f"… and {len(plan['entries']) - _SHOWN} more (--json shows all)")
    actions = ", ".join(f"{n} {a}" for a, n in sorted(summary["actions"].items())) or "nothing"
    reasons = ", ".join(f"{n} {shown(r)}" for r, n in sorted(summary["reasons"].items()))
    console.print(
        f"{summary['files']} files: {actions}{f' ({reasons})' if reasons else ''}; "
        f"{summary['bytes']:,} bytes to write",
        highlight=False,
    )


def _print_report(report: dict[str, Any]) -> None:
    states = ", ".join(f"{n} {s}" for s, n in sorted(report["states"].items())) or "no files"
    console.print(f"{report['entries']} files: {states}", highlight=False)
    for problem in report["problems"]:
        detail = problem["message"] or ""
        if problem["reason"] == "duplicate" and not detail:
            detail = f"of {problem['destination']}"  # the copy placed there
        console.print(
            f"  {problem['state']} {shown(problem['source'])}: {shown(problem['reason'])} "
            f"{shown(detail)}",
            highlight=False,
            soft_wrap=True,
        )


@app.command()
def verify(
    wait: WaitOption = False,
    as_json: JsonOption = False,
    sample: Annotated[
        float | None,
        typer.Option(
            min=0.001,
            max=100,
            metavar="PERCENT",
            help="Check only this share of the files, the least recently verified first "
            "(a rolling window: 25 checks every file in four runs).",
        ),
    ] = None,
) -> None:
    """Hash every original again; report changed (bit rot) or missing files.
    With --wait, exits 5 when any file changed, went missing or cannot be read (its
    item failed), 1 when the job itself did not succeed."""
    from photo_pipeline.pipeline.verify import start_verify, verify_report

    lib = library()

    def show(job: dict[str, Any]) -> None:
        if not wait:
            print_json(job) if as_json else console.print(f"verify job {job['id']}: {job['state']}")
            return
        report = verify_report(lib.service, job["id"])
        if as_json:
            print_json(report)
            return
        # Every kind of finding (a link out of the roots too), the usual three always.
        kinds = ["changed", "missing", "unreadable_file"]
        kinds += [k for k, v in report.items() if isinstance(v, list) and v and k not in kinds]
        counts = ", ".join(f"{len(report[k])} {k.removesuffix('_file')}" for k in kinds)
        console.print(
            f"verify job {job['id']}: {report['job']['state']}, {report['checked']} files "
            f"checked, {report['ok']} ok, {counts}",
            highlight=False,
        )
        for kind in kinds:
            for finding in report[kind]:
                console.print(f"  {kind} {shown(finding['path'])}", highlight=False, soft_wrap=True)

    # A verify still active (its command was killed) is rejoined.
    job = start_verify(lib.service, rejoin=True, sample=sample).job
    finish_job(job, wait=wait, as_json=as_json, show=show)
