"""The job types a client may start with ``POST /api/jobs``: each validates its params
(paths confined to the allowed roots) and queues its job(s) through the pipeline."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from photo_pipeline.api.problems import ApiError
from photo_pipeline.db.text import is_text, storable
from photo_pipeline.jobs import Enqueued, JobConflict
from photo_pipeline.pipeline import dedupe, organize
from photo_pipeline.pipeline.files.roots import PathOutsideRoots, real_path_inside
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library import Library

Start = Callable[[Library, Any, str | None], Enqueued]


@dataclass(frozen=True)
class JobType:
    params: type[BaseModel]
    start: Start
    description: str


JOB_TYPES: dict[str, JobType] = {}


def job_type(name: str, params: type[BaseModel], description: str) -> Callable[[Start], Start]:
    def register(start: Start) -> Start:
        JOB_TYPES[name] = JobType(params, start, description)
        return start

    return register


def start_job(lib: Library, type_: str, params: dict[str, Any], key: str | None) -> Enqueued:
    kind = JOB_TYPES.get(type_)
    if kind is None:
        raise ApiError(
            422,
            "unknown_job_type",
            f"unknown job type {type_!r}; known: {', '.join(sorted(JOB_TYPES))}",
        )
    try:
        parsed = kind.params.model_validate(params)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in ("params", *first["loc"]))
        raise ApiError(422, "invalid_params", f"{where}: {first['msg']}") from None
    scoped = None if key is None else scoped_key(type_, key)
    try:
        return kind.start(lib, parsed, scoped)
    except JobConflict as exc:
        if exc.code != "idempotency_conflict" or key is None or scoped is None:
            raise
        raise _key_taken(lib, key, scoped, type_) from exc


# Room left in the 200-character key column for the suffixes of a chain's jobs
# ("#render", "#scan-12").
_SCOPED_KEY_MAX = 150


def scoped_key(type_: str, key: str) -> str:
    """The coordinator's key for a client's ``Idempotency-Key`` on ``type_``: keys are
    per job type, so one used for an import does not block a render. A long key is
    replaced by its digest (deterministic: a replay finds the same job)."""
    scoped = f"{type_}:{key}"
    if len(scoped) <= _SCOPED_KEY_MAX:
        return scoped
    return f"{type_}:~{hashlib.sha256(key.encode()).hexdigest()}"


def _key_taken(lib: Library, key: str, scoped: str, type_: str) -> ApiError:
    """An Idempotency-Key names one request of its job type for good: another request
    of that type with other params is refused, naming the job the key belongs to, so
    the client knows to pick a new key rather than wait."""
    holder = lib.service.find_by_idempotency_key(scoped)
    if holder is None:  # the key's own job is gone (pruned): a plain conflict
        return ApiError(409, "idempotency_conflict", f"Idempotency-Key {key!r} is taken")
    return ApiError(
        409,
        "idempotency_conflict",
        f"Idempotency-Key {key!r} already names job {holder['id']} "
        f"({holder['job_type']}, {holder['state']!s}), made by a different {type_!r} request "
        "than this one; use a new key for a new request",
        job_id=holder["id"],
        job_type=holder["job_type"],
    )


def confined_path(lib: Library, raw: str, what: str) -> Path:
    """An absolute path, normalised (``..`` and symlinks resolved), and inside one of
    ``PHOTO_PIPELINE_ALLOWED_ROOTS`` when those are set."""
    if "\x00" in raw or not raw.strip():
        raise ApiError(422, "invalid_path", f"{what}: not a valid path")
    # JSON can carry a lone surrogate ("\udc80"), which is not text: os would read it as
    # a byte of a name that is not UTF-8, and neither the catalogue nor an answer echoing
    # it could encode it. Refused before realpath and the roots see it.
    if not is_text(raw):
        raise ApiError(
            422, "invalid_path", f"{what}: must be Unicode text (no lone surrogates), got {raw!r}"
        )
    path = Path(raw)
    if not path.is_absolute():
        raise ApiError(422, "invalid_path", f"{what}: must be an absolute path, got {raw!r}")
    return Path(require_inside_allowed_roots(lib, path, what))


def require_utf8_path(path: Path, what: str) -> Path:
    """``path``, or 422 ``path_not_utf8`` when a name in it is not UTF-8 (os gives such
    bytes back surrogate-escaped): a path a job stores in its params is stored as text,
    and neither database could take it."""
    if not is_text(str(path)):
        raise ApiError(
            422,
            "path_not_utf8",
            f"{what}: {storable(str(path))} is not UTF-8, and a job's paths are stored as text; "
            "name a folder whose path is UTF-8",
        )
    return path


def require_inside_allowed_roots(lib: Library, path: str | os.PathLike[str], what: str) -> str:
    """The real path of ``path`` now, or 403 ``path_not_allowed`` when it leaves
    ``PHOTO_PIPELINE_ALLOWED_ROOTS`` (unset: any path)."""
    try:
        return real_path_inside(path, [str(root) for root in lib.settings.allowed_roots], what)
    except PathOutsideRoots:
        raise ApiError(
            403,
            "path_not_allowed",
            f"{what}: {os.fsdecode(path)!r} is outside PHOTO_PIPELINE_ALLOWED_ROOTS",
        ) from None


def require_job_paths_inside_roots(lib: Library, job_id: str) -> None:
    """403 ``path_not_allowed`` when a path job ``job_id`` acts on now resolves outside
    the allowed roots: for a request that acts on another job (an undo; a retry) and
    may reach no further than a request naming those paths could. The job may have
    been started from the command line, or before the roots changed, or a folder may
    since have become a symlink. An organize job's paths are its destination and the
    folders its journal touches (an undo's are its organize job's), a scan's are its
    sources, a dedupe's the folders it moved files from; timeshifts change the catalogue
    only."""
    if not lib.settings.allowed_roots:
        return
    job = lib.service.get(job_id)
    if job is not None and job["job_type"] == organize.UNDO_JOB_TYPE:
        job_id = job["params"]["organize_job_id"]
        job = lib.service.get(job_id)
    elif job is not None and job["job_type"] == dedupe.UNDO_JOB_TYPE:
        job_id = job["params"]["dedupe_job_id"]
        job = lib.service.get(job_id)
    if job is None:
        return  # the request's own handling refuses it, with its own code
    named: set[tuple[str, str]] = set()
    if job["job_type"] == scan.JOB_TYPE:
        named |= {("source", source["path"]) for source in job["params"]["sources"]}
    elif job["job_type"] == organize.JOB_TYPE:
        destination = job["params"]["destination"]
        named.add(("destination", destination))
        for entry in organize.Journal(lib.sessions, job_id).load():
            # Folders, not every file: what an undo writes or deletes is in these.
            named.add(("source", entry.source_root))
            named.add(("source folder", os.path.dirname(entry.source())))
            named.add(("destination folder", os.path.dirname(entry.dest(destination))))
    elif job["job_type"] == dedupe.JOB_TYPE:
        # What it moved out, and what an undo or a retry would move back in.
        for dedupe_entry in dedupe.Journal(lib.sessions).of_job(job_id):
            named.add(("source", dedupe_entry.source_root))
            named.add(("source folder", os.path.dirname(dedupe_entry.source())))
    for what, path in sorted(named):
        require_inside_allowed_roots(lib, path, f"{job['job_type']} job {job_id}: {what}")
