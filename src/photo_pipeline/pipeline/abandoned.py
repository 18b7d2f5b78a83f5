"""Files left parked by a job that moves files and stopped for good, given their names
back: ``files.parked``'s mechanism with the places of every job type that parks
(organize and its undo, dedupe, its undo and purge; their journals say where).

Every job that moves or judges originals calls :func:`restore_abandoned` first, and
the front doors cancel through :func:`cancel`. This module sits above organize and
dedupe, which import it: ``files`` itself knows no job type.
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.jobs import JobService, JobSnapshot
from photo_pipeline.pipeline.dedupe import journal as dedupe_journal
from photo_pipeline.pipeline.files import parked
from photo_pipeline.pipeline.organize import journal as organize_journal

MOVERS: dict[str, parked.Places] = {**organize_journal.LEFTOVERS, **dedupe_journal.LEFTOVERS}


def restore_abandoned(
    session_factory: sessionmaker[Session], *, job_ids: Iterable[str] | None = None
) -> list[parked.Restored]:
    """Every file a cancelled or failed mover (of ``job_ids``, or any) left parked
    gets its name back; their temp files are deleted (``parked.restore_abandoned``)."""
    return parked.restore_abandoned(session_factory, MOVERS, job_ids=job_ids)


def cancel(service: JobService, job_id: str, *, reason: str | None = None) -> JobSnapshot:
    """Cancel a job; a mover killed on this host gives back what it parked at once."""
    return parked.cancel(service, job_id, MOVERS, reason=reason)
