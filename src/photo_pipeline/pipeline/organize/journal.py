"""Organize's journal (``organize_entries``): a job's whole plan, written before it
touches a file, one row per file with its state (``.states``: planned, then done,
failed or skipped; undone by its undo). A crash at any instant is resumed by looking at the
disk: an entry is re-run until its row says done. Also what a job did, as a report,
and what a stopped one may have left behind."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import organize_entries, sources
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.files import fenced_journal, parked, paths
from photo_pipeline.pipeline.files.fenced_journal import FencedJournal, SourceEntry, entry_of
from photo_pipeline.pipeline.organize.plan import PlanEntry
from photo_pipeline.pipeline.organize.start import JOB_TYPE, UNDO_JOB_TYPE
from photo_pipeline.pipeline.organize.states import DONE as DONE
from photo_pipeline.pipeline.organize.states import FAILED as FAILED
from photo_pipeline.pipeline.organize.states import PLANNED as PLANNED
from photo_pipeline.pipeline.organize.states import SKIPPED as SKIPPED
from photo_pipeline.pipeline.organize.states import UNDONE as UNDONE


@dataclass(frozen=True)
class Entry(SourceEntry):
    """One journal row, with what executing it needs."""

    id: int
    seq: int
    kind: str
    action: str
    file_id: int | None
    source_id: int
    source_root: str
    source_path: str
    dest_path: str
    content_hash: str
    state: str

    def dest(self, destination: str) -> str:
        return os.path.join(destination, paths.from_text(self.dest_path))


Recorded = fenced_journal.Recorded[Entry]


class Journal(FencedJournal[Entry]):
    """The entries of one organize job (``job_id``); writes fenced by ``fence``."""

    table = organize_entries

    def __init__(
        self,
        session_factory: sessionmaker[Session],
        job_id: str,
        fence: tuple[str, int] | None = None,
    ) -> None:
        super().__init__(session_factory, fence)
        self.job_id = job_id

    def load(self) -> list[Entry]:
        query = (
            select(organize_entries, sources.c.path.label("source_root"))
            .join(sources, sources.c.id == organize_entries.c.source_id)
            .where(organize_entries.c.job_id == self.job_id)
            .order_by(organize_entries.c.seq)
        )
        with read_session(self._session_factory) as session:
            return [entry_of(Entry, row) for row in session.execute(query)]

    def write_plan(self, plan: list[PlanEntry]) -> None:
        """All entries in one transaction: a journal is either whole or absent."""
        self.write_rows(
            self.job_id,
            [
                {
                    "seq": e.seq,
                    "kind": e.kind,
                    "action": e.action,
                    "reason": e.reason,
                    "file_id": e.candidate.file_id,
                    "source_id": e.candidate.source_id,
                    "source_path": e.candidate.path,
                    "dest_path": e.dest_path,
                    "content_hash": e.candidate.content_hash,
                    "size": e.candidate.size,
                    "state": SKIPPED if e.action == "skip" else PLANNED,
                }
                for e in plan
            ],
        )


def unfinished(session: Session, organize_job_id: str, states: list[str]) -> Iterator[Row[Any]]:
    """The entries of a job in ``states`` (skips aside), with their source's root."""
    return iter(
        session.execute(
            select(
                organize_entries.c.seq,
                organize_entries.c.action,
                organize_entries.c.source_path,
                organize_entries.c.dest_path,
                sources.c.path.label("root"),
            )
            .join(sources, sources.c.id == organize_entries.c.source_id)
            .where(
                organize_entries.c.job_id == organize_job_id,
                organize_entries.c.action != "skip",
                organize_entries.c.state.in_(states),
            )
        )
    )


# ── reports ────────────────────────────────────────────────────────────────────
def organize_report(
    session_factory: sessionmaker[Session],
    job_id: str,
    *,
    limit: int = 100,
    undo_job_id: str | None = None,
) -> dict[str, Any]:
    """What an organize job did: entry counts per state and action, and the first
    ``limit`` failed or skipped entries with their reasons. With ``undo_job_id``, the
    entries that undo failed to reverse are problems too (state ``undo_failed``): a
    failed undo leaves its entry as the organize left it, so only its item tells."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(organize_entries)
            .where(organize_entries.c.job_id == job_id)
            .order_by(organize_entries.c.seq)
        ).all()
    undo_failed = {}
    if undo_job_id is not None:
        failed_items = JobService(session_factory).items(undo_job_id, states=["failed"])
        undo_failed = {int(i["item_key"].split(":", 1)[0]): i for i in failed_items}
    counts: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    for row in rows:
        counts[row.state] = counts.get(row.state, 0) + 1
        failure = undo_failed.get(row.seq)
        if (failure or row.state in (FAILED, SKIPPED)) and len(problems) < limit:
            problems.append(
                {
                    "seq": row.seq,
                    "state": "undo_failed" if failure else row.state,
                    "source": paths.display(row.source_path),
                    "destination": paths.display(row.dest_path),
                    "reason": failure["error_code"] if failure else row.error_code or row.reason,
                    "message": failure["error_message"] if failure else row.error_message,
                }
            )
    return {"job_id": job_id, "entries": len(rows), "states": counts, "problems": problems}


def _organize_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    """A source a move parked, a temp copy in the destination: entries not done."""
    for row in unfinished(session, job_id, [PLANNED, FAILED]):
        if row.action == "move":
            yield parked.Place(JOB_TYPE, row.root, paths.from_text(row.source_path), row.seq)
        yield parked.Place(JOB_TYPE, params["destination"], paths.from_text(row.dest_path), row.seq)


def _undo_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    """A placed file the undo parked, a temp copy on its way back: entries not undone."""
    for row in unfinished(session, params["organize_job_id"], [PLANNED, FAILED, DONE]):
        yield parked.Place("undo", params["destination"], paths.from_text(row.dest_path), row.seq)
        yield parked.Place("undo", row.root, paths.from_text(row.source_path), row.seq)


# Where each job type may have left a parked or temp file (``pipeline.abandoned``).
LEFTOVERS: dict[str, parked.Places] = {
    JOB_TYPE: _organize_leftovers,
    UNDO_JOB_TYPE: _undo_leftovers,
}
