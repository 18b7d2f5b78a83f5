"""The front doors of dedupe: the dry run, and queueing a dedupe, its undo or a purge
(each holds the library lock). Where a job's copies go: its quarantine folder."""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import Enqueued, JobNotFound, JobService, utc_now
from photo_pipeline.pipeline.dedupe.plan import build_dedupe_plan, summary
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.home import QUARANTINE
from photo_pipeline.pipeline.library.locks import enqueue_library_job, enqueue_or_join
from photo_pipeline.pipeline.library.scope import resolve_scope

JOB_TYPE = "dedupe"
UNDO_JOB_TYPE = "dedupe_undo"
PURGE_JOB_TYPE = "dedupe_purge"

_MAX_DAYS = 36_525


class DedupeError(PhotoPipelineError):
    """A request dedupe refuses: ``not_a_dedupe_job``, ``invalid_days``,
    ``quarantine_inside_source``."""

    code = "dedupe_refused"
    status = 422


def quarantine_folder(home: str | Path, job_id: str) -> str:
    """Where a dedupe job's copies go: ``<home>/quarantine/<job id>``."""
    return os.path.join(os.path.abspath(home), QUARANTINE, job_id)


# ── the plan ───────────────────────────────────────────────────────────────────
def plan_dedupe(
    session_factory: sessionmaker[Session],
    *,
    near: bool = False,
    limit: int | None = None,
    sources: Sequence[str | int] = (),
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """The dry run as JSON-able data, touching nothing: ``summary`` (groups, files to
    quarantine, bytes reclaimed, keepers by reason; with ``near``, ``near_undecided``:
    the near-duplicate groups that wait for someone to choose what to keep, and
    ``decide``: where that is done) and ``groups`` (the first ``limit``, or all), each
    with its keeper, why it won and what moves. ``sources``/``since``/``until`` limit
    it (``library.scope``); raises ``ScopeError`` for a bad one."""
    scope = resolve_scope(session_factory, sources, since, until)
    undecided: list[str] = []
    plans = build_dedupe_plan(session_factory, near=near, scope=scope, undecided=undecided)
    shown = plans if limit is None else plans[:limit]
    totals = summary(plans)
    if near:
        totals["near_undecided"] = len(undecided)
        totals["decide"] = DECIDE
    return {
        "near": near,
        "scope": scope.as_params(),
        "summary": totals,
        "groups": [plan.as_dict() for plan in shown],
        "truncated": len(shown) < len(plans),
    }


# Where the keepers of a near-duplicate group are chosen (a dedupe never guesses them).
DECIDE = (
    "choose what to keep on the Duplicates page of the web UI (`photo-pipeline serve`, "
    "then /duplicates); `photo-pipeline duplicates --near` lists the groups"
)


# ── starting jobs ──────────────────────────────────────────────────────────────
def start_dedupe(
    service: JobService,
    home: str | Path,
    *,
    near: bool = False,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    rejoin: bool = False,
    hard_links: bool = True,
    roots: Sequence[Path | str] = (),
    sources: Sequence[str | int] = (),
    since: str | None = None,
    until: str | None = None,
) -> Enqueued:
    """Queue a ``dedupe`` job (of ``sources``/``since``/``until`` only, as the plan).
    Raises ``LibraryBusy`` (``lock_held``) while another job holds the library;
    ``rejoin`` returns an active job of this very request, a replay of
    ``idempotency_key`` its job (before the quarantine is judged again).
    ``hard_links=False`` copies into the quarantine even within one filesystem (for
    tests and odd mounts). ``roots``: the allowed roots the request was checked
    against (the API's), carried by the job and enforced again when it runs."""
    # Its real path: the jobs open it with no link on the way (files.spots.open_root).
    params: dict[str, Any] = {"home": os.path.realpath(home), "near": near}
    if not hard_links:
        params["hard_links"] = False
    if roots:
        params["roots"] = [str(root) for root in roots]
    params.update(resolve_scope(service.session_factory, sources, since, until).as_params())
    replayed = service.replay(idempotency_key, JOB_TYPE, params)
    if replayed is not None:
        return replayed
    _check_quarantine(service.session_factory, params["home"])
    enqueue = enqueue_or_join if rejoin else enqueue_library_job
    return enqueue(service, JOB_TYPE, params, idempotency_key, max_attempts)


def undo_key(dedupe_job_id: str) -> str:
    """The idempotency key of a dedupe job's undo: there is only ever one."""
    return f"dedupe-undo:{dedupe_job_id}"


def start_undo(service: JobService, dedupe_job_id: str, *, max_attempts: int = 10) -> Enqueued:
    """Queue the undo of a dedupe job (asking twice returns the same undo job,
    ``created`` False)."""
    replayed = service.replay(
        undo_key(dedupe_job_id),
        UNDO_JOB_TYPE,
        {"dedupe_job_id": dedupe_job_id},
        fixed_when_queued=["home"],
    )
    if replayed is not None:
        return replayed
    job = service.get(dedupe_job_id)
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {dedupe_job_id!r}")
    if job["job_type"] != JOB_TYPE:
        raise DedupeError(
            "not_a_dedupe_job", f"job {dedupe_job_id} is a {job['job_type']} job, not a dedupe job"
        )
    params = {"dedupe_job_id": dedupe_job_id, "home": job["params"]["home"]}
    return enqueue_library_job(
        service, UNDO_JOB_TYPE, params, undo_key(dedupe_job_id), max_attempts
    )


def start_purge(
    service: JobService,
    home: str | Path,
    older_than_days: int,
    *,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    rejoin: bool = False,
) -> Enqueued:
    """Queue a purge of files quarantined more than ``older_than_days`` days ago (a
    replay of ``idempotency_key`` returns its job, whose cutoff was fixed then);
    ``rejoin`` returns the active purge of this very request (its command killed and
    run again), with the cutoff it fixed then."""
    if type(older_than_days) is not int or not 0 <= older_than_days <= _MAX_DAYS:
        raise DedupeError(
            "invalid_days", f"--older-than-days must be 0..{_MAX_DAYS}, got {older_than_days!r}"
        )
    asked = {"home": os.path.realpath(home), "older_than_days": older_than_days}
    replayed = service.replay(idempotency_key, PURGE_JOB_TYPE, asked, fixed_when_queued=["before"])
    if replayed is not None:
        return replayed
    # The cutoff is fixed now, so a resumed purge deletes what was asked, no more.
    cutoff = utc_now() - timedelta(days=older_than_days)
    params = {**asked, "before": cutoff.isoformat()}
    if not rejoin:
        return enqueue_library_job(service, PURGE_JOB_TYPE, params, idempotency_key, max_attempts)
    return enqueue_or_join(
        service,
        PURGE_JOB_TYPE,
        params,
        idempotency_key,
        max_attempts,
        # The active purge of this request fixed its own cutoff when it was queued.
        joins=lambda job: (
            job["job_type"] == PURGE_JOB_TYPE and job["params"] | asked == job["params"]
        ),
    )


def _check_quarantine(session_factory: sessionmaker[Session], home: str) -> None:
    """A quarantine inside a source would be scanned as originals again."""
    quarantine = Path(os.path.realpath(os.path.join(home, QUARANTINE)))
    for root in Catalog(session_factory).source_paths():
        if quarantine.is_relative_to(root):
            raise DedupeError(
                "quarantine_inside_source",
                f"the quarantine {quarantine} is inside the source {root}: its copies would "
                "be catalogued as originals again; use a library home outside your photos",
            )
