"""How a command that queued jobs ends: wait for them when asked, print what they
did, and exit with the code that says how it went (README, "Command line")."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import typer

from photo_pipeline.cli.common import (
    EXIT_FAILED_ITEMS,
    EXIT_JOB_DID_NOT_SUCCEED,
    EXIT_OK,
    console,
    library,
    print_json,
)

if TYPE_CHECKING:
    from photo_pipeline.jobs import JobService

Show = Callable[[list[dict[str, Any]]], None]


def outcome(service: JobService, jobs: list[dict[str, Any]]) -> int:
    """The exit code of finished ``jobs``: 1 if one did not succeed, else 5 if one
    has failed items (a corrupt photo, a file that could not be placed), else 0."""
    from photo_pipeline.jobs import JobState

    if any(job["state"] != JobState.SUCCEEDED for job in jobs):
        return EXIT_JOB_DID_NOT_SUCCEED
    progress = service.progress_of([job["id"] for job in jobs])
    if any(p["by_state"].get("failed", 0) for p in progress.values()):
        return EXIT_FAILED_ITEMS
    return EXIT_OK


def finish_jobs(
    jobs: list[dict[str, Any]],
    *,
    wait: bool,
    as_json: bool,
    what: str = "items",
    show: Show | None = None,
    embedded: bool | None = None,
) -> list[dict[str, Any]]:
    """With ``wait``, run ``jobs`` to their end (progress bars; an in-process worker
    when no live one serves them; ``embedded`` forces it either way). Then print
    them (``show``, else JSON or one summary line per job) and, when waited for,
    exit with their ``outcome``. Returns the jobs as last seen."""
    # The waiting machinery loads the coordinator: here, not when a command is listed.
    from photo_pipeline.cli.progress import ride_out, wait_for_jobs

    lib = library()
    if wait:
        jobs = wait_for_jobs(
            lib, [job["id"] for job in jobs], embedded=embedded, show_progress=not as_json
        )
    if as_json and show is None:
        print_json(jobs)
    else:
        # Each reads, then prints, so an outage is ridden out by running it again.
        def printed() -> None:
            if show is not None:
                show(jobs)
            else:
                summarise(jobs, what)

        if wait:
            ride_out(printed)
        else:
            printed()
    if wait:
        code = ride_out(lambda: outcome(lib.service, jobs))
        if code != EXIT_OK:
            raise typer.Exit(code)
    return jobs


def finish_job(
    job: dict[str, Any],
    *,
    wait: bool,
    as_json: bool,
    what: str = "items",
    show: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    """``finish_jobs`` for one job (printed as one JSON object, not a list)."""

    def show_one(jobs: list[dict[str, Any]]) -> None:
        if show is not None:
            show(jobs[0])
        elif as_json:
            print_json(jobs[0])
        else:
            summarise(jobs, what)

    [final] = finish_jobs([job], wait=wait, as_json=as_json, show=show_one)
    return final


def summarise(jobs: list[dict[str, Any]], what: str = "items") -> None:
    """One line per job: its state and item counts."""
    progress = library().service.progress_of([job["id"] for job in jobs])
    for job in jobs:
        counts = progress[job["id"]]
        console.print(
            f"{job['job_type']} job {job['id']}: {job['state']}, "
            f"{counts['done']}/{counts['total']} {what}, "
            f"{counts['by_state'].get('failed', 0)} failed",
            highlight=False,
        )
