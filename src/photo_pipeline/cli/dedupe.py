"""``dedupe``: move every copy of a duplicate but one into the quarantine, undo that,
or purge the quarantine for good."""

from __future__ import annotations

from typing import Annotated, Any

import typer

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
from photo_pipeline.cli.organize import SinceOption, SourceOption, UntilOption
from photo_pipeline.cli.shown import counted, shown

_SHOWN = 40


def _refuse(code: str, detail: str) -> None:
    err_console.print(f"[red]error[/] {code}: {detail}", highlight=False)
    raise typer.Exit(EXIT_REFUSED)


@app.command(rich_help_panel=ORIGINALS_PANEL)
def dedupe(
    near: Annotated[
        bool,
        typer.Option("--near", help="Also near duplicates, where you recorded which to keep."),
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Print the plan and why; touch nothing.")
    ] = False,
    undo: Annotated[
        str | None,
        typer.Option("--undo", metavar="JOB_ID", help="Put back what a dedupe job moved."),
    ] = None,
    purge: Annotated[
        bool, typer.Option("--purge", help="Delete quarantined files for good.")
    ] = False,
    older_than_days: Annotated[
        int | None,
        typer.Option(
            "--older-than-days", min=0, max=36_525, help="With --purge: quarantined before."
        ),
    ] = None,
    source: SourceOption = None,
    since: SinceOption = None,
    until: UntilOption = None,
    wait: WaitOption = False,
    as_json: JsonOption = False,
) -> None:
    """Reclaim the space of exact duplicates: keep one copy, quarantine the others.

    The copy kept follows the keeper policy (--dry-run explains it); the others move
    into <home>/quarantine/<job id>/. --source/--since/--until: only the copies in
    those sources, taken on those days."""
    from photo_pipeline.cli.progress import full_job_id
    from photo_pipeline.pipeline import dedupe as deduping

    lib = library()
    if sum((undo is not None, purge, dry_run)) > 1:
        _refuse("invalid_option", "--undo, --purge and --dry-run go alone")
    if purge and older_than_days is None:
        _refuse("invalid_option", "--purge needs --older-than-days N")
    if older_than_days is not None and not purge:
        _refuse("invalid_option", "--older-than-days goes with --purge")
    scoped: dict[str, Any] = {"sources": source or (), "since": since, "until": until}
    if (undo is not None or purge) and (source or since or until):
        _refuse("invalid_option", "--source, --since and --until go with a dedupe or its --dry-run")
    if dry_run:
        plan = deduping.plan_dedupe(lib.sessions, near=near, **scoped)
        print_json(plan) if as_json else _print_plan(plan)
        return
    if undo is not None:
        job = deduping.start_undo(lib.service, full_job_id(lib.service, undo)).job
    elif purge:
        assert older_than_days is not None
        job = deduping.start_purge(lib.service, lib.settings.home, older_than_days, rejoin=True).job
    else:
        # Rerunning a command whose job is still active (it was killed) rejoins it.
        job = deduping.start_dedupe(
            lib.service, lib.settings.home, near=near, rejoin=True, **scoped
        ).job

    def show(final: dict[str, Any]) -> None:
        report = deduping.dedupe_report(lib.sessions, final["id"])
        if as_json:
            print_json({"job": final, "report": report})
            return
        console.print(f"{final['job_type']} job {final['id']}: {final['state']}", highlight=False)
        if wait:
            _print_report(report)

    finish_job(job, wait=wait, as_json=as_json, show=show)


def _print_plan(plan: dict[str, Any]) -> None:
    listed = 0
    for group in plan["groups"]:
        if listed >= _SHOWN:
            break
        console.print(
            f"[bold]keep[/] {shown(group['keeper'])}  "
            f"[dim]({shown(group['reason'])}: {shown(group['why'])})[/]",
            highlight=False,
            soft_wrap=True,
        )
        for moving in group["quarantine"]:
            listed += 1
            console.print(
                f"  → quarantine {shown(moving['path'])}  [dim]{moving['size']:,} bytes[/]",
                highlight=False,
                soft_wrap=True,
            )
    summary = plan["summary"]
    if summary["files"] > listed:
        console.print(f"… and {summary['files'] - listed} more (--json shows all)")
    reasons = ", ".join(f"{n} {shown(r)}" for r, n in sorted(summary["keeper_reasons"].items()))
    console.print(
        f"{counted(summary['groups'], 'groups')}: {counted(summary['files'], 'files')} to "
        "quarantine, "
        f"{summary['bytes']:,} bytes reclaimed{f' (keepers: {reasons})' if reasons else ''}",
        highlight=False,
    )
    waiting = summary.get("near_undecided", 0)
    if waiting:
        console.print(
            f"[yellow]{counted(waiting, 'near-duplicate groups')} "
            f"{'waits' if waiting == 1 else 'wait'} for your decision[/] and "
            f"{'is' if waiting == 1 else 'are'} left alone: {summary['decide']}; "
            "then run `dedupe --near` again",
            highlight=False,
            soft_wrap=True,
        )


def _print_report(report: dict[str, Any]) -> None:
    if "bytes_reclaimed" in report:
        console.print(
            f"{counted(report['purged'], 'files purged')}, "
            f"{counted(report['bytes_reclaimed'], 'bytes reclaimed')}",
            highlight=False,
        )
        _print_problems(report["problems"], "kept")
        return
    if "restored" in report:
        console.print(counted(report["restored"], "files put back"), highlight=False)
        _print_problems(report["problems"], "not put back")
        return
    states = ", ".join(f"{n} {s}" for s, n in sorted(report["states"].items())) or "no files"
    console.print(
        f"{counted(report['entries'], 'files')}: {states}; "
        f"{counted(report['bytes_quarantined'], 'bytes quarantined')}",
        highlight=False,
    )
    _print_problems(report["problems"], "skipped")


def _print_problems(problems: list[dict[str, Any]], what: str) -> None:
    for problem in problems:
        console.print(
            f"  {what} {shown(problem['path'])}: {shown(problem['reason'])} "
            f"{shown(problem['message'] or '')}",
            highlight=False,
            soft_wrap=True,
        )
