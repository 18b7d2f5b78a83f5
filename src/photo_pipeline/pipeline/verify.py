"""The ``verify`` job: hash every catalogued original again and report the ones whose
bytes changed (bit rot, an editor saving over them) or that went missing.

Items are files (``source_id:path``, as in scan). A file that is fine succeeds; one
that is not fails its item with ``content_changed``, ``missing`` or
``unreadable_file``. The catalogue is not changed: what to do about a finding is the
user's call (a rescan records the new state).
"""

from __future__ import annotations

import functools
import os
import stat
from collections.abc import Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets, files, sources
from photo_pipeline.jobs import Enqueued, JobService, outcome, problems
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError, registry
from photo_pipeline.media import MediaError, hashing
from photo_pipeline.media.errors import UNREADABLE_FILE
from photo_pipeline.media.files import media_error_from_os
from photo_pipeline.pipeline import abandoned, job_words, verify_window
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.files.roots import (
    SYMLINK_OUTSIDE_ROOTS,
    PathOutsideRoots,
    library_roots,
    open_inside,
    real_path_inside,
)
from photo_pipeline.pipeline.library import locks
from photo_pipeline.pipeline.library.catalog import PRESENT

JOB_TYPE = "verify"
PROBLEM_CODES = ("content_changed", "missing", "unreadable_file", SYMLINK_OUTSIDE_ROOTS)
_ADD_CHUNK = 1000


def start_verify(
    service: JobService,
    *,
    idempotency_key: str | None = None,
    max_attempts: int = 3,
    rejoin: bool = False,
    sample: float | None = None,
) -> Enqueued:
    """Queue a ``verify`` of every present catalogued photo (``sample``: a rolling
    share of them, in percent, ``verify_window``). It takes the library
    lock (a file being moved by organize is not missing); ``LibraryBusy`` names the
    job holding it. A replay of ``idempotency_key`` returns its job, also while that
    job holds the lock; ``rejoin`` returns an active verify holding it."""
    params = {} if sample is None else {"sample": verify_window.check_sample(sample)}
    replayed = service.replay(idempotency_key, JOB_TYPE, params)
    if replayed is not None:
        return replayed
    enqueue = locks.enqueue_or_join if rejoin else locks.enqueue_library_job
    return enqueue(service, JOB_TYPE, params, idempotency_key, max_attempts)


def _expected(session_factory: sessionmaker[Session]) -> tuple[dict[str, str], dict[str, str]]:
    """Item key -> catalogued hash for every present photo, and source id -> folder."""
    query = (
        select(files.c.source_id, files.c.path, assets.c.content_hash)
        .join(assets, assets.c.id == files.c.asset_id)
        .where(files.c.state == PRESENT)
        .order_by(files.c.source_id, files.c.path)
    )
    with read_session(session_factory) as session:
        expected = {f"{r.source_id}:{r.path}": r.content_hash for r in session.execute(query)}
        roots = {str(r.id): r.path for r in session.execute(select(sources))}
    return expected, roots


@registry.handler(JOB_TYPE)
def verify(ctx: JobContext) -> None:
    abandoned.restore_abandoned(ctx.session_factory)  # else a file a killed job hid is missing
    expected, roots = _expected(ctx.session_factory)
    expected = verify_window.choose(ctx, expected)  # all, or a rolling share (sample)
    # Added on every run (existing keys are ignored), so a resumed job also checks
    # files catalogued meanwhile.
    keys = list(expected)
    for start in range(0, len(keys), _ADD_CHUNK):
        ctx.add_items(keys[start : start + _ADD_CHUNK])

    def compare(key: str, found: str | None) -> None:
        want = expected.get(key)
        if want is None:
            return  # no longer catalogued as present (rescanned meanwhile): nothing to say
        if found is None:
            raise ItemError("missing", "the file is gone")
        if found != want:
            raise ItemError(
                "content_changed",
                f"content hash is now {found[:16]}…, catalogued {want[:16]}… (bit rot or edited)",
            )

    # Only where the library's files may really be: a catalogued file replaced by a
    # symlink to elsewhere fails with symlink_outside_roots, unread.
    allowed = library_roots(ctx.session_factory)
    # A partial of a module-level function: picklable for a process pool too.
    on_result = verify_window.stamping(ctx, compare)  # files found unchanged: verified now
    ctx.map(functools.partial(hash_item, roots, allowed), on_result=on_result)


def hash_item(
    roots: dict[str, str], allowed: Sequence[str], _params: dict[str, Any], item_key: str
) -> str | None:
    """The current hash of an item's file, None when it is gone (runs in the pool)."""
    source_id, stored = item_key.split(":", 1)
    if source_id not in roots:
        return None
    path = os.path.join(roots[source_id], paths.from_text(stored))
    try:
        return _hash_inside(path, allowed)
    except PathOutsideRoots as exc:
        raise ItemError(exc.code, exc.detail) from exc
    except MediaError as exc:
        if exc.code == "file_vanished":
            return None
        raise ItemError("unreadable_file", exc.detail) from exc


def _hash_inside(path: str, allowed: Sequence[str]) -> str:
    """BLAKE3 of the regular file at ``path``, read through a descriptor whose real
    file is inside ``allowed`` (``pinned``'s checks: the name first, so a link leading
    outside is not even opened, then the descriptor, against a swap in between).
    Hashed from the descriptor itself, not from a stand-in path as ``pinned`` gives:
    its folder made and removed per file took longer than the hashing."""
    real_path_inside(path, allowed)
    try:
        # O_NONBLOCK: a FIFO at the path must not block the open (refused just below).
        fd = open_inside(path, allowed, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise media_error_from_os(exc, path) from exc
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise MediaError(UNREADABLE_FILE, f"{path}: not a regular file")
        return hashing.hash_fd(fd)
    except OSError as exc:
        raise media_error_from_os(exc, path) from exc
    finally:
        os.close(fd)


def verify_report(service: JobService, job_id: str, *, limit: int = 10_000) -> dict[str, Any]:
    """The findings of a verify job: counts, and the files per problem, each with its
    name, folder and what to do about it (``job_words.advice``)."""
    progress = service.progress(job_id)
    failed = service.items(job_id, states=["failed"], limit=limit)
    places = job_words.item_places(
        service.session_factory, JOB_TYPE, (i["item_key"] for i in failed)
    )
    findings: dict[str, list[dict[str, Any]]] = {code: [] for code in PROBLEM_CODES}
    for item in failed:
        place = places[item["item_key"]]
        entry = {
            "path": os.path.join(place.folder or "?", place.name),
            "name": place.name,
            "folder": place.folder,
            "message": item["error_message"],
            "advice": job_words.advice(JOB_TYPE, item["error_code"], place),
        }
        findings.setdefault(item["error_code"], []).append(entry)
    by_state = progress["by_state"]
    job = service.get(job_id)
    return {
        "job": job,
        "outcome": None if job is None else outcome(job["state"], by_state),
        "checked": progress["done"],
        "ok": by_state.get("succeeded", 0),
        "problems": problems(by_state),
        **{"changed" if k == "content_changed" else k: v for k, v in findings.items()},
    }
