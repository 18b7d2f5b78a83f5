"""How a command that queued jobs ends: wait for them when asked, print what they
did, and exit with the code that says how it went (README, "Command line")."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
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
from photo_pipeline.cli.shown import shown

if TYPE_CHECKING:
    from photo_pipeline.cli.progress import Waiting
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
    ready: Waiting | None = None,
) -> list[dict[str, Any]]:
    """With ``wait``, run ``jobs`` to their end (progress bars; an in-process worker
    when no live one serves them; ``embedded`` forces it either way; ``ready``: the
    wait begun before they were queued, ``early_wait``). Then print
    them (``show``, else JSON or one summary line per job) and, when waited for,
    exit with their ``outcome``. Returns the jobs as last seen."""
    # The waiting machinery loads the coordinator: here, not when a command is listed.
    from photo_pipeline.cli.progress import ride_out, wait_for_jobs

    lib = library()
    if wait:
        jobs = wait_for_jobs(
            lib,
            [job["id"] for job in jobs],
            embedded=embedded,
            show_progress=not as_json,
            ready=ready,
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


@contextmanager
def early_wait(wait: bool, job_types: set[str]) -> Iterator[Waiting | None]:
    """With ``wait``, the wait begun before the command queues its jobs (of
    ``job_types``): the embedded worker, when one is needed, is up and claims the
    first job as it commits, while the command queues the rest. Stopped if the
    command fails before handing it to ``finish_jobs``."""
    if not wait:
        yield None
        return
    from photo_pipeline.cli.progress import ride_out, start_waiting

    lib = library()
    ready = ride_out(lambda: start_waiting(lib, job_types, embedded=None))
    try:
        yield ready
    except BaseException:
        ready.stop()
        raise


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
    """One line per job: its outcome, its item counts in words (``what``: a plural
    phrase), and its failed files by name, as ``2 failed: IMG_0003.JPG (corrupt_file:
    …)``; ``job show`` has their folders and what to do."""
    from photo_pipeline.cli.job_words import (
        NAMED_IN_SUMMARY,
        counts_words,
        failed_summary,
        outcome_words,
    )
    from photo_pipeline.pipeline import job_words

    service = library().service
    progress = service.progress_of([job["id"] for job in jobs])
    for job in jobs:
        counts = progress[job["id"]]
        told = counts_words(counts, what, breakdown=False)
        state = outcome_words(job["state"], counts["by_state"])
        line = f"{shown(job['job_type'])} job {job['id']}: {state}, {shown(told)}"
        how_many = counts["by_state"].get("failed", 0)
        if how_many:
            failed = service.items(job["id"], states=["failed"], limit=NAMED_IN_SUMMARY)
            places = job_words.item_places(
                service.session_factory, job["job_type"], (i["item_key"] for i in failed)
            )
            line += f"; {failed_summary(failed, places, how_many)}"
        console.print(line, highlight=False, soft_wrap=True)
