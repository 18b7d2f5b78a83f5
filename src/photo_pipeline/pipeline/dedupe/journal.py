"""Dedupe's journal (``dedupe_entries``): a job's whole plan, written before it
touches a file, one row per copy to quarantine with its keeper and its state
(planned, then quarantined or skipped; restored by an undo, purged by a purge).
Also what a job did, as a report, and where a stopped job may have left files."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Row, func, select, true
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import dedupe_entries, job_items, jobs, sources
from photo_pipeline.pipeline.dedupe.plan import GroupPlan, bundle_stem
from photo_pipeline.pipeline.dedupe.start import (
    JOB_TYPE,
    PURGE_JOB_TYPE,
    UNDO_JOB_TYPE,
    quarantine_folder,
)
from photo_pipeline.pipeline.files import fenced_journal, parked, paths
from photo_pipeline.pipeline.files.fenced_journal import FencedJournal, SourceEntry, entry_of

PLANNED, QUARANTINED, SKIPPED = "planned", "quarantined", "skipped"
RESTORED, PURGED = "restored", "purged"


@dataclass(frozen=True)
class Entry(SourceEntry):
    """One journal row, with the roots executing it needs."""

    id: int
    job_id: str
    seq: int
    kind: str
    file_id: int | None
    source_id: int
    source_root: str
    source_path: str
    quarantine_path: str
    content_hash: str
    size: int
    keeper_root: str
    keeper_path: str
    keeper_hash: str
    state: str

    @property
    def bundle(self) -> tuple[int, str, str]:
        relative = paths.from_text(self.source_path)
        return (
            self.source_id,
            os.path.dirname(relative),
            bundle_stem(os.path.basename(relative)),
        )


Recorded = fenced_journal.Recorded[Entry]


class Journal(FencedJournal[Entry]):
    """The entries of dedupe jobs; writes fenced by ``fence``."""

    table = dedupe_entries

    def load(self, *where: Any) -> list[Entry]:
        keeper_sources = sources.alias("keeper_sources")
        query = (
            select(
                dedupe_entries,
                sources.c.path.label("source_root"),
                keeper_sources.c.path.label("keeper_root"),
            )
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .join(keeper_sources, keeper_sources.c.id == dedupe_entries.c.keeper_source_id)
            .where(*where)
            .order_by(dedupe_entries.c.job_id, dedupe_entries.c.seq)
        )
        with read_session(self._session_factory) as session:
            return [entry_of(Entry, row) for row in session.execute(query)]

    def of_job(self, job_id: str) -> list[Entry]:
        return self.load(dedupe_entries.c.job_id == job_id)

    def write_plan(self, job_id: str, plans: list[GroupPlan]) -> None:
        """All entries in one transaction: a journal is either whole or absent."""
        self.write_rows(
            job_id,
            [
                {
                    "seq": move.seq,
                    "group_key": move.group_key,
                    "kind": move.kind,
                    "reason": move.reason,
                    "file_id": move.member.file_id,
                    "source_id": move.member.source_id,
                    "source_path": move.member.path,
                    "quarantine_path": move.quarantine_path,
                    "content_hash": move.member.content_hash,
                    "size": move.member.size,
                    "keeper_source_id": move.keeper.source_id,
                    "keeper_path": move.keeper.path,
                    "keeper_hash": move.keeper.content_hash,
                    "state": PLANNED,
                }
                for plan in plans
                for move in plan.moves
            ],
        )


def entries(session: Session, *where: Any) -> Iterator[Row[Any]]:
    """Entries (``where``) with what finding their files needs."""
    return iter(
        session.execute(
            select(
                dedupe_entries.c.job_id,
                dedupe_entries.c.seq,
                dedupe_entries.c.source_path,
                dedupe_entries.c.quarantine_path,
                sources.c.path.label("root"),
            )
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .where(*where)
        )
    )


def places(kind: str, home: str, row: Row[Any]) -> Iterator[parked.Place]:
    """An entry's original and its quarantined copy: either may have been parked
    (removed after placing the other) or had a temp copy beside it."""
    yield parked.Place(kind, row.root, paths.from_text(row.source_path), row.seq)
    quarantine = quarantine_folder(home, row.job_id)
    yield parked.Place(kind, quarantine, paths.from_text(row.quarantine_path), row.seq)


# ── reports ────────────────────────────────────────────────────────────────────
def _failed(
    session: Session,
    job_id: str,
    limit: int,
    number: ColumnElement[int],
    among: ColumnElement[bool],
) -> list[dict[str, Any]]:
    """The first ``limit`` files an undo or purge job failed, with the reasons; its
    item keys start with the entry's ``number`` (a column), unique ``among`` entries."""
    failed = session.execute(
        select(job_items.c.item_key, job_items.c.error_code, job_items.c.error_message)
        .where(job_items.c.job_id == job_id, job_items.c.state == "failed")
        .order_by(job_items.c.id)
        .limit(limit)
    ).all()
    numbers = [int(row.item_key.split(":", 1)[0]) for row in failed]
    where = {
        row.number: f"{row.root}/{paths.display(row.source_path)}"
        for row in session.execute(
            select(
                number.label("number"), dedupe_entries.c.source_path, sources.c.path.label("root")
            )
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .where(among, number.in_(numbers))
        )
    }
    return [
        {"path": where.get(n), "reason": row.error_code, "message": row.error_message}
        for n, row in zip(numbers, failed, strict=True)
    ]


def dedupe_report(
    session_factory: sessionmaker[Session], job_id: str, *, limit: int = 100
) -> dict[str, Any]:
    """What a dedupe, undo or purge job did: entries per state, bytes quarantined (or
    reclaimed by a purge), and the first ``limit`` skipped entries with reasons."""
    with read_session(session_factory) as session:
        job_type = session.scalar(select(jobs.c.job_type).where(jobs.c.id == job_id))
        if job_type == PURGE_JOB_TYPE:
            count, reclaimed = session.execute(
                select(func.count(), func.coalesce(func.sum(dedupe_entries.c.size), 0)).where(
                    dedupe_entries.c.purge_job_id == job_id
                )
            ).one()
            return {
                "job_id": job_id,
                "purged": count,
                "bytes_reclaimed": int(reclaimed),
                # Kept: their keeper is gone or changed (never the last copy deleted).
                "problems": _failed(session, job_id, limit, dedupe_entries.c.id, true()),
            }
        if job_type == UNDO_JOB_TYPE:
            restored = session.scalar(
                select(func.count()).where(dedupe_entries.c.undo_job_id == job_id)
            )
            params = session.scalar(select(jobs.c.params).where(jobs.c.id == job_id)) or {}
            of_its_dedupe = dedupe_entries.c.job_id == params.get("dedupe_job_id")
            return {
                "job_id": job_id,
                "restored": restored,
                "problems": _failed(session, job_id, limit, dedupe_entries.c.seq, of_its_dedupe),
            }
        rows = session.execute(
            select(dedupe_entries, sources.c.path.label("root"))
            .join(sources, sources.c.id == dedupe_entries.c.source_id)
            .where(dedupe_entries.c.job_id == job_id)
            .order_by(dedupe_entries.c.seq)
        ).all()
    states: dict[str, int] = {}
    problems: list[dict[str, Any]] = []
    quarantined_bytes = 0
    for row in rows:
        states[row.state] = states.get(row.state, 0) + 1
        if row.state in (QUARANTINED, PURGED):
            quarantined_bytes += row.size
        if row.state == SKIPPED and len(problems) < limit:
            problems.append(
                {
                    "seq": row.seq,
                    "group": row.group_key,
                    "path": f"{row.root}/{paths.display(row.source_path)}",
                    "reason": row.error_code,
                    "message": row.error_message,
                }
            )
    return {
        "job_id": job_id,
        "entries": len(rows),
        "states": states,
        "bytes_quarantined": quarantined_bytes,
        "problems": problems,
    }


def _dedupe_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    unfinished = dedupe_entries.c.state.in_([PLANNED, SKIPPED])
    for row in entries(session, dedupe_entries.c.job_id == job_id, unfinished):
        yield from places(JOB_TYPE, params["home"], row)


def _undo_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    unfinished = dedupe_entries.c.state.in_([PLANNED, QUARANTINED, PURGED])
    for row in entries(session, dedupe_entries.c.job_id == params["dedupe_job_id"], unfinished):
        yield from places(UNDO_JOB_TYPE, params["home"], row)


def _purge_leftovers(
    session: Session, job_id: str, params: dict[str, Any]
) -> Iterator[parked.Place]:
    before = datetime.fromisoformat(params["before"])
    rows = entries(
        session,
        dedupe_entries.c.state == QUARANTINED,
        dedupe_entries.c.quarantined_at < before,
    )
    for row in rows:
        held = paths.from_text(row.quarantine_path)
        quarantine = quarantine_folder(params["home"], row.job_id)
        yield parked.Place(PURGE_JOB_TYPE, quarantine, held, row.seq)


# Where each job type may have left a parked or temp file (``pipeline.abandoned``).
LEFTOVERS: dict[str, parked.Places] = {
    JOB_TYPE: _dedupe_leftovers,
    UNDO_JOB_TYPE: _undo_leftovers,
    PURGE_JOB_TYPE: _purge_leftovers,
}
