"""Files parked by a job that moves files and will not run again: given their names back.

``files.transfer.retire`` parks a file (renames it to a private ``.pp-…parked``
name in its folder) for the instant it checks it before removing it. A worker killed
in that instant leaves the file parked, hidden from the user. The job itself gives it its
name back when it runs again; a job that will not (cancelled, or failed for good and
not retried) cannot, so this module does it for such jobs. Their journals say which
entry each private name belongs to, so which name the file had; temp files they left
(partial copies) are deleted. A name taken meanwhile is never overwritten: the file
comes back beside it as ``NAME (kept N).EXT``, and a warning names both.

``restore_abandoned`` runs at the start of every job that moves files (organize and
its undo, dedupe, its undo and purge) and of scan and verify (which would otherwise
see the file missing); ``cancel`` runs it right after a cancel. Each job type that
parks says where (its ``Places``: its journal's unfinished entries), and the caller
passes them all (``pipeline.abandoned``): this module knows no job type. Only
cancelled or failed jobs are looked at, and succeeded ones with an item that failed
``left_parked`` (its folder went read-only mid-removal: the file is put back once it
is writable again), and only names of fencing tokens they had when looked at: a job
retried meanwhile parks under a newer token, not touched.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, exists, or_, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import job_items, jobs
from photo_pipeline.jobs import JobService, JobSnapshot, JobState
from photo_pipeline.jobs.handlers import ItemError
from photo_pipeline.jobs.states import ItemState
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.files import transfer
from photo_pipeline.pipeline.files.transfer import LEFT_PARKED

log = logging.getLogger(__name__)

ABANDONED = (JobState.CANCELLED, JobState.FAILED)


@dataclass(frozen=True)
class Place:
    """A file a job may have parked, or written a temp file beside: the ``kind`` of
    its private names (``transfer.PrivateNames``), the folder ``root`` and the path
    below it, and the journal entry's ``seq``."""

    kind: str
    root: str
    path: str
    seq: int


# ``places(session, job_id, params)``: where a job of one type that stopped for good
# may have left a parked or temp file (its unfinished journal entries).
Places = Callable[[Session, str, dict[str, Any]], Iterable[Place]]


@dataclass(frozen=True)
class Restored:
    job_id: str
    path: str  # where the file is now
    original: str  # the name it had; different from ``path`` when that was taken


def restore_abandoned(
    session_factory: sessionmaker[Session],
    movers: Mapping[str, Places],
    *,
    job_ids: Iterable[str] | None = None,
) -> list[Restored]:
    """Give every file parked by a cancelled or failed job (of ``job_ids``, or any) of
    the types in ``movers`` its name back and delete their temp files. Returns the
    files put back."""
    left_parked = exists().where(
        job_items.c.job_id == jobs.c.id,
        job_items.c.state == ItemState.FAILED,
        job_items.c.error_code == LEFT_PARKED,
    )
    query = select(jobs.c.id, jobs.c.job_type, jobs.c.params, jobs.c.fencing_token).where(
        jobs.c.job_type.in_(list(movers)),
        or_(
            jobs.c.state.in_([s.value for s in ABANDONED]),
            and_(jobs.c.state == JobState.SUCCEEDED, left_parked),
        ),
    )
    if job_ids is not None:
        query = query.where(jobs.c.id.in_(list(job_ids)))
    with read_session(session_factory) as session:
        found = [
            (row.id, row.fencing_token, list(movers[row.job_type](session, row.id, row.params)))
            for row in session.execute(query)
        ]
    restored: list[Restored] = []
    for job_id, token, places in found:
        restored += _restore(job_id, token, places)
    for item in restored:
        taken = f"; {item.original} holds another file now" if item.path != item.original else ""
        log.warning(
            "%s was left parked by job %s, which stopped for good%s: it is back as %s",
            item.original,
            item.job_id,
            taken,
            item.path,
        )
    return restored


def cancel(
    service: JobService,
    job_id: str,
    movers: Mapping[str, Places],
    *,
    reason: str | None = None,
) -> JobSnapshot:
    """Cancel a job (``JobService.cancel``). When it moves files (its type is in
    ``movers``) and its worker was killed on this host, the cancel is finished now
    rather than at the next recovery, and what the job left parked is put back at once."""
    job = service.cancel(job_id, reason=reason)
    if job["job_type"] not in movers:
        return job
    if job["state"] == JobState.CANCELLING:
        WorkerRegistry(service.session_factory).find_dead_on_this_host()
        service.recover_stale()  # a cancelling job of a dead worker becomes cancelled
        job = service.get(job_id) or job
    if job["state"] == JobState.CANCELLED:
        restore_abandoned(service.session_factory, movers, job_ids=[job_id])
    return job


def _restore(job_id: str, token: int, places: list[Place]) -> list[Restored]:
    """One job: list each folder once, put back what it parked there."""
    names: dict[tuple[str, str, str], dict[int, str]] = {}
    for place in places:
        folder, name = os.path.split(place.path)
        names.setdefault((place.kind, place.root, folder), {})[place.seq] = name
    restored = []
    for (kind, root, folder), by_seq in names.items():
        pattern = re.compile(
            rf"\.pp-{re.escape(kind)}-{re.escape(job_id[:8])}-(\d+)-(\d+)\.(tmp|parked)"
        )
        try:
            fd = transfer.open_folder(root, folder)
        except ItemError:
            continue  # gone, or reached through a symlink: nothing of ours in it
        try:
            for name in os.listdir(fd):
                match = pattern.fullmatch(name)
                if match is None or int(match[2]) > token:
                    continue  # another job's, or a run newer than the state we read
                if match[3] == "tmp":
                    with contextlib.suppress(FileNotFoundError):
                        os.unlink(name, dir_fd=fd)
                    continue
                original = by_seq.get(int(match[1]))
                if original is None:
                    continue  # no entry of this name here: not ours to name
                path = os.path.join(root, folder)
                spot = transfer.Spot(fd, original, os.path.join(path, original))
                now = transfer.unpark(spot, name)
                if now is not None:
                    restored.append(
                        Restored(job_id, os.path.join(path, now), os.path.join(path, original))
                    )
        except OSError as exc:
            where = os.path.join(root, folder)
            log.warning("could not look for parked files in %s: %s", where, exc)
        finally:
            os.close(fd)
    return restored
