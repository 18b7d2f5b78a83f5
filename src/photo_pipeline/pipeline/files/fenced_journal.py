"""A job's journal of file moves (organize's, dedupe's): written whole before the job
touches a file, then one row per entry brought up to date as the job goes.

Writes are fenced: the plan lands only while ``fence`` (the running job's id and
fencing token) still holds the job, and results are written in the transaction that
reports their items done (``JobContext.before_flush``), which the coordinator fences.
So a worker that lost its lease cannot overwrite what its successor recorded.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from sqlalchemy import Row, Table, bindparam, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import write_session
from photo_pipeline.db.bulk import insert_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import jobs
from photo_pipeline.jobs import utc_now
from photo_pipeline.jobs.context import LeaseLost, RowWriter
from photo_pipeline.pipeline.files import paths


class JournalRow(Protocol):
    """An entry: a dataclass with the row's ``id``."""

    __dataclass_fields__: ClassVar[dict[str, dataclasses.Field[Any]]]

    @property
    def id(self) -> int: ...


EntryT = TypeVar("EntryT", bound=JournalRow)

# An entry as ``record`` buffered it: the entry, its new column values, and what the
# catalogue needs of it.
Recorded = tuple[EntryT, dict[str, Any], Any]


def entry_of(entry_type: type[EntryT], row: Row[Any]) -> EntryT:
    """An entry (a dataclass) from the row's columns of its fields' names."""
    fields = dataclasses.fields(entry_type)
    return entry_type(**{field.name: getattr(row, field.name) for field in fields})


class SourceEntry:
    """What an entry (a dataclass declaring these fields) knows of the file it moves
    from: its item key in the job, and its path."""

    seq: int
    source_root: str
    source_path: str  # stored form (pipeline.files.paths)

    @property
    def item_key(self) -> str:
        return f"{self.seq}:{paths.display(self.source_path)}"[:2000]

    def source(self) -> str:
        return os.path.join(self.source_root, paths.from_text(self.source_path))

    def source_folder(self) -> tuple[str, str]:
        """The source's folder as ``(root, relative)`` (``spots.open_folder``)."""
        return self.source_root, os.path.dirname(paths.from_text(self.source_path))


class FencedJournal(Generic[EntryT]):
    """The rows of ``table`` (an ``id`` column, a ``job_id`` column) for jobs of one
    kind. ``record`` buffers an entry's new values (and what the catalogue needs of
    it); ``writer`` hands them to the job's fenced transaction."""

    table: Table

    def __init__(
        self, session_factory: sessionmaker[Session], fence: tuple[str, int] | None = None
    ) -> None:
        self._session_factory = session_factory
        self._fence = fence
        self._pending: list[Recorded[EntryT]] = []

    @transactional
    def write_rows(self, job_id: str, rows: Sequence[Mapping[str, Any]]) -> None:
        """All of a job's entries (``rows``: their columns but ``job_id`` and
        ``updated_at``) in one transaction: a journal is either whole or absent
        (written once: a second call finds it there and adds nothing)."""
        now = utc_now()
        with write_session(self._session_factory) as session:
            self.check_fence(session)
            if session.scalar(
                select(self.table.c.id).where(self.table.c.job_id == job_id).limit(1)
            ):
                return
            stamped = [{"job_id": job_id, **row, "updated_at": now} for row in rows]
            insert_rows(session, self.table, stamped)

    def check_fence(self, session: Session) -> None:
        if self._fence is None:
            return
        job_id, token = self._fence
        # Row-locked, so a claim by another worker cannot commit in between.
        current = session.scalar(
            select(jobs.c.fencing_token).where(jobs.c.id == job_id).with_for_update()
        )
        if current != token:
            raise LeaseLost(f"job {job_id} is no longer held under fencing token {token}")

    def record(self, entry: EntryT, values: dict[str, Any], extra: Any = None) -> None:
        """Buffer an entry's new column ``values`` (and ``extra`` for the catalogue);
        written by ``writer``, with the entry's item result."""
        self._pending.append((entry, values, extra))

    def writer(
        self, catalog_update: Callable[[Session, list[Recorded[EntryT]]], None]
    ) -> RowWriter | None:
        """The buffered entries and their catalogue changes (``catalog_update``), as a
        writer for the job's fenced transaction: they land with their items' results,
        or not at all. None when nothing is buffered."""
        if not self._pending:
            return None
        batch, self._pending = self._pending, []

        def write(session: Session) -> None:
            catalog_update(session, batch)
            self._update(session, batch)

        return write

    def _update(self, session: Session, batch: list[Recorded[EntryT]]) -> None:
        now = utc_now()
        # One executemany per shape of values (done, failed, undone), not one
        # statement per entry.
        shapes: dict[tuple[str, ...], list[dict[str, Any]]] = {}
        for entry, values, _ in batch:
            shapes.setdefault(tuple(sorted(values)), []).append(
                {"entry_id": entry.id, "updated_at": now, **values}
            )
        for columns, rows in shapes.items():
            statement = (
                update(self.table)
                .where(self.table.c.id == bindparam("entry_id"))
                .values({c: bindparam(c) for c in ("updated_at", *columns)})
            )
            session.execute(statement, rows)
