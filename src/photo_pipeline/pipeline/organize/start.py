"""The front doors of organize: check a request, plan it dry, queue its job (or its
undo's). The plan is a pure function of catalogue rows, the template and what already
lies in the destination (``plan.build_plan``); ``plan_organize`` serves it as
JSON-able dicts (the CLI's ``--dry-run --json`` and the API print the same thing)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import jobs, sources
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import Enqueued, JobNotFound, JobService
from photo_pipeline.media.capture_time import confidence
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.library.home import MARKER, of_the_home
from photo_pipeline.pipeline.library.locks import enqueue_library_job, enqueue_or_join
from photo_pipeline.pipeline.library.scope import resolve_scope
from photo_pipeline.pipeline.organize.plan import (
    DestinationState,
    PlanEntry,
    build_plan,
    catalogue_candidates,
)
from photo_pipeline.pipeline.organize.template import DEFAULT_TEMPLATE, inside, parse

JOB_TYPE = "organize"
UNDO_JOB_TYPE = "organize.undo"


class OrganizeError(PhotoPipelineError):
    """A request ``organize`` refuses: ``destination_not_a_folder``,
    ``destination_not_writable``, ``destination_is_source``, ``destination_inside_source``,
    ``destination_contains_source``, ``not_an_organize_job``."""

    code = "organize_refused"
    status = 422


def check_destination(session_factory: sessionmaker[Session], destination: Path | str) -> str:
    """The destination as an absolute path, refused when it is a file, not writable,
    a library home or a folder of its own files, or is, lies in or holds a registered
    source, unless that source is an earlier organize's destination (organize
    registers its destination as a source: organizing into it again is fine)."""
    target = Path(destination).expanduser().resolve()
    for home in (target, *target.parents):
        if (home / MARKER).is_file() and of_the_home(target, home):
            raise OrganizeError(
                "inside_library_home",
                f"{target} is the library home {home} or holds its own files (renditions, "
                "quarantined copies): choose a destination outside them",
            )
    if target.exists() and not target.is_dir():
        raise OrganizeError("destination_not_a_folder", f"{target} exists and is not a folder")
    existing = target
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        raise OrganizeError("destination_not_a_folder", f"{existing} is not a folder")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise OrganizeError("destination_not_writable", f"{existing} is not writable")
    with read_session(session_factory) as session:
        roots = [Path(p) for p in session.scalars(select(sources.c.path))]
        organized = Path(target) in roots and _organized_into(session, str(target))
    for root in roots:
        if root == target:
            if organized:
                continue
            raise OrganizeError(
                "destination_is_source",
                f"{target} is a source: organizing into it would copy or move its "
                "originals among themselves; choose a folder outside your sources",
            )
        if target.is_relative_to(root):
            raise OrganizeError(
                "destination_inside_source",
                f"{target} is inside the source {root}: organizing would move files "
                "within a folder that is scanned as originals",
            )
        if root.is_relative_to(target):
            raise OrganizeError(
                "destination_contains_source",
                f"the source {root} is inside {target}: choose a destination outside it",
            )
    return str(target)


def _organized_into(session: Session, destination: str) -> bool:
    """Whether an organize job has had ``destination`` as its destination."""
    query = select(jobs.c.id).where(
        jobs.c.job_type == JOB_TYPE, jobs.c.params["destination"].as_string() == destination
    )
    return session.execute(query.limit(1)).first() is not None


def plan_organize(
    session_factory: sessionmaker[Session],
    destination: Path | str,
    template: str = DEFAULT_TEMPLATE,
    *,
    move: bool = False,
    limit: int | None = None,
    keep_duplicates: bool = False,
    sources: Sequence[str | int] = (),
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """The dry-run plan as JSON-able data, touching nothing: ``summary`` (counts per
    action and reason, bytes to write, undated photos, photos per date confidence)
    and ``entries`` (the first ``limit``, or all), each with its date's source and
    confidence. ``sources``/``since``/``until`` limit it (``library.scope``).
    Raises ``TemplateError`` / ``OrganizeError`` / ``ScopeError`` for bad input."""
    parsed = parse(template)
    scope = resolve_scope(session_factory, sources, since, until)
    root = check_destination(session_factory, destination)
    plan = build_plan(
        catalogue_candidates(session_factory, root),
        parsed,
        move=move,
        existing=DestinationState(root),
        keep_duplicates=keep_duplicates,
        scope=scope,
    )
    for entry in plan:
        inside(root, paths.from_text(entry.dest_path))  # last line of defence
    shown = plan if limit is None else plan[:limit]
    return {
        "destination": root,
        "template": parsed.text,
        "mode": "move" if move else "copy",
        "scope": scope.as_params(),
        "summary": _summary(plan, parsed.files_undated),
        "entries": [entry.as_dict(root) for entry in shown],
        "truncated": len(shown) < len(plan),
    }


def _summary(plan: list[PlanEntry], files_undated: bool) -> dict[str, Any]:
    """Counts per action and reason, bytes to write; of the photos (not sidecars),
    how many are undated and how many per date confidence, and whether the template
    files undated ones apart (``undated_fallback``) or by their file's mtime."""
    summary: dict[str, Any] = {
        "files": len(plan),
        "bytes": 0,
        "actions": {},
        "reasons": {},
        "undated": 0,
        "undated_fallback": files_undated,
        "date_confidence": {},
    }
    for entry in plan:
        summary["actions"][entry.action] = summary["actions"].get(entry.action, 0) + 1
        if entry.reason:
            summary["reasons"][entry.reason] = summary["reasons"].get(entry.reason, 0) + 1
        if entry.action != "skip":
            summary["bytes"] += entry.candidate.size
        if entry.kind != "sidecar":
            summary["undated"] += entry.undated
            level = confidence(entry.date_source or "")
            summary["date_confidence"][level] = summary["date_confidence"].get(level, 0) + 1
    return summary


# ── starting jobs ──────────────────────────────────────────────────────────────
def start_organize(
    service: JobService,
    destination: Path | str,
    template: str = DEFAULT_TEMPLATE,
    *,
    move: bool = False,
    idempotency_key: str | None = None,
    max_attempts: int = 10,
    hard_links: bool = True,
    rejoin: bool = False,
    keep_duplicates: bool = False,
    roots: Sequence[Path | str] = (),
    sources: Sequence[str | int] = (),
    since: str | None = None,
    until: str | None = None,
) -> Enqueued:
    """Queue an ``organize`` job (after validating the template and destination; a
    replay of ``idempotency_key`` returns its job before that, unjudged).
    Raises ``LibraryBusy`` (``lock_held``, naming the job) while another organize,
    undo or verify is active. ``hard_links=False`` makes a move within one
    filesystem copy and delete instead of linking (slower; for tests and odd mounts).
    ``rejoin``: when an active job of this very request holds the lock (its command
    was killed, say), return that job instead of refusing. ``roots``: the allowed
    roots the request was checked against (the API's), which the job carries and
    enforces again when it runs (``files.roots.require_sources_inside``).
    ``sources``/``since``/``until``: only those sources' photos taken on those days
    (``library.scope``), carried by the job's parameters."""
    parsed = parse(template)
    scope = resolve_scope(service.session_factory, sources, since, until)
    target = str(Path(destination).expanduser().resolve())
    params = {
        "destination": target,
        "template": parsed.text,
        "move": move,
        "hard_links": hard_links,
    }
    if keep_duplicates:  # only when asked: the params of earlier requests stay the same
        params["keep_duplicates"] = True
    if roots:
        params["roots"] = [str(root) for root in roots]
    params.update(scope.as_params())
    replayed = service.replay(idempotency_key, JOB_TYPE, params)
    if replayed is not None:
        return replayed
    check_destination(service.session_factory, target)
    enqueue = enqueue_or_join if rejoin else enqueue_library_job
    return enqueue(service, JOB_TYPE, params, idempotency_key, max_attempts)


def undo_key(organize_job_id: str) -> str:
    """The idempotency key of an organize job's undo: there is only ever one."""
    return f"organize-undo:{organize_job_id}"


def start_undo(service: JobService, organize_job_id: str, *, max_attempts: int = 10) -> Enqueued:
    """Queue the undo of a finished organize job: moved files go back, copies are
    removed. Asking twice returns the same undo job (``created`` False)."""
    key = undo_key(organize_job_id)
    replayed = service.replay(
        key, UNDO_JOB_TYPE, {"organize_job_id": organize_job_id}, fixed_when_queued=["destination"]
    )
    if replayed is not None:
        return replayed
    job = service.get(organize_job_id)
    if job is None:
        raise JobNotFound("job_not_found", f"no job with id {organize_job_id!r}")
    if job["job_type"] != JOB_TYPE:
        raise OrganizeError(
            "not_an_organize_job",
            f"job {organize_job_id} is a {job['job_type']} job, not an organize job",
        )
    params = {"organize_job_id": organize_job_id, "destination": job["params"]["destination"]}
    return enqueue_library_job(service, UNDO_JOB_TYPE, params, key, max_attempts)
