"""Commands that touch originals: organize (and its undo) and verify."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from photo_pipeline.cli.common import (
    EXIT_REFUSED,
    ORIGINALS_PANEL,
    JsonOption,
    WaitOption,
    app,
    console,
    err_console,
    library,
    print_json,
)
from photo_pipeline.cli.finish import finish_job
from photo_pipeline.cli.shown import counted, shown
from photo_pipeline.pipeline.organize.template import DEFAULT_TEMPLATE  # no database: light

_SHOWN = 40

SourceOption = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        metavar="ID|PATH",
        help="Only this registered source (its id or folder; repeatable).",
    ),
]
SinceOption = Annotated[
    str | None,
    typer.Option(
        "--since", metavar="YYYY-MM-DD", help="Only photos taken on this day or later (local)."
    ),
]
UntilOption = Annotated[
    str | None,
    typer.Option(
        "--until", metavar="YYYY-MM-DD", help="Only photos taken on this day or before (local)."
    ),
]


@app.command(rich_help_panel=ORIGINALS_PANEL)
def organize(
    dest: Annotated[
        Path | None, typer.Option("--dest", help="Destination folder of the layout.")
    ] = None,
    template: Annotated[
        str,
        typer.Option(
            help="Layout of the destination; fields in {braces}, after | the fallback of "
            "an undated photo (its only date the file's mtime): {taken:%Y|undated}."
        ),
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
    source: SourceOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Copy or move originals into a dated layout (collision-safe, resumable, undoable).

    Undated files (their only date is the file's mtime) go to undated/, in their folder
    of the source, with the default template; `{taken:%Y|undated}` says so in yours."""
    from photo_pipeline.cli.progress import full_job_id
    from photo_pipeline.pipeline import organize as organizing

    lib = library()
    if undo is not None and dry_run:
        err_console.print("[red]error[/] invalid_option: --undo has no --dry-run; see `job show`")
        raise typer.Exit(EXIT_REFUSED)
    scoped: dict[str, Any] = {"sources": source or (), "since": since, "until": until}
    if undo is not None and (source or since or until):
        err_console.print(
            "[red]error[/] invalid_option: --undo undoes the whole job; "
            "--source, --since and --until do not go with it"
        )
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
                lib.sessions, dest, template, move=move, keep_duplicates=keep_duplicates, **scoped
            )
            print_json(plan) if as_json else _print_plan(plan)
            return
        # Rerunning a command whose job is still active (it was killed) rejoins it.
        job = organizing.start_organize(
            lib.service,
            dest,
            template,
            move=move,
            rejoin=True,
            keep_duplicates=keep_duplicates,
            **scoped,
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
    table = Table("action", "source", f"in {shown(plan['destination'])}", "date from", "note")
    prefix = plan["destination"].rstrip("/") + "/"
    for entry in plan["entries"][:_SHOWN]:
        relative = entry["destination"].removeprefix(prefix)
        table.add_row(
            entry["action"],
            shown(entry["source"]),
            shown(relative),
            _date_from(entry),
            shown(entry["reason"] or ""),
        )
    if plan["entries"]:
        console.print(table)
    if len(plan["entries"]) > _SHOWN:
        console.print(f"… and {len(plan['entries']) - _SHOWN} more (--json shows all)")
    actions = ", ".join(f"{n} {a}" for a, n in sorted(summary["actions"].items())) or "nothing"
    reasons = ", ".join(f"{n} {shown(r)}" for r, n in sorted(summary["reasons"].items()))
    console.print(
        f"{counted(summary['files'], 'files')}: {actions}{f' ({reasons})' if reasons else ''}; "
        f"{summary['bytes']:,} bytes to write",
        highlight=False,
    )
    counts = summary["date_confidence"]
    levels = ", ".join(f"{counts[c]} {text}" for c, text in _LEVELS.items() if counts.get(c))
    if levels:
        console.print(f"dates: {levels}", highlight=False)
    if summary["undated"]:
        where = (
            "filed by the template's fallback (undated/ by default)"
            if summary["undated_fallback"]
            else "filed by their file's mtime: add a fallback such as {taken:%Y|undated}"
        )
        console.print(
            f"[yellow]{counted(summary['undated'], 'photos')} undated[/] (no date but the "
            f"file's mtime, often when it was copied): {where}",
            highlight=False,
        )


# How each date confidence (media.capture_time.CONFIDENCES) reads in the plan.
_LEVELS = {
    "user": "set by you",
    "camera": "from the camera",
    "inferred": "inferred (GPS, service)",
    "filename": "from the file name",
    "file_time": "undated (file mtime)",
}


def _date_from(entry: dict[str, Any]) -> str:
    """The entry's date source and its confidence (``undated`` for a file time)."""
    source = entry.get("date_source")
    if not source:
        return ""
    level = entry.get("date_confidence")
    if entry.get("undated"):
        return f"{source} (undated)"
    return source if level == source else f"{source} ({level})"


def _print_report(report: dict[str, Any]) -> None:
    states = ", ".join(f"{n} {s}" for s, n in sorted(report["states"].items())) or "no files"
    console.print(f"{counted(report['entries'], 'files')}: {states}", highlight=False)
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


@app.command(rich_help_panel=ORIGINALS_PANEL)
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
        from photo_pipeline.cli.job_words import verify_lines

        for line in verify_lines(report):
            console.print(line, highlight=False, soft_wrap=True)

    # A verify still active (its command was killed) is rejoined.
    job = start_verify(lib.service, rejoin=True, sample=sample).job
    finish_job(job, wait=wait, as_json=as_json, show=show)
