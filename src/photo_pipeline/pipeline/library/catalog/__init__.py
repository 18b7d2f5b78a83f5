"""The library's rows: sources, files and assets (the pipeline's side of the database).

``Catalog`` is the one class callers use; it keeps the sources and the files' scan
bookkeeping itself and hands the rest to:

- :mod:`.record`: recording what inspecting files found (``FileReport``), assets made
  on first sight;
- :mod:`.listings`: assets, files and exact duplicates, page by page;
- :mod:`.placed`: rows that follow files organize or dedupe put elsewhere;
- :mod:`.states`: the states of a file row.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from sqlalchemy import func, or_, select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import files, sources
from photo_pipeline.jobs.service import Clock, utc_now
from photo_pipeline.pipeline.curation.filters import CurationFilter
from photo_pipeline.pipeline.file_states import (
    FAILED,
    IGNORED,
    MISSING,
    PRESENT,
    QUARANTINED,
    SIDECAR,
)
from photo_pipeline.pipeline.library.catalog import listings, placed
from photo_pipeline.pipeline.library.catalog.listings import (
    ASSET_TYPES,
    listing_session,
    place_matches,
    type_matches,
)
from photo_pipeline.pipeline.library.catalog.record import FileReport, record_reports


class KnownFile(NamedTuple):
    size: int
    mtime_ns: int
    inode: int
    state: str
    error_code: str | None = None  # why it failed (state failed)


# A file's path and what a rescan compares it by (KnownFile's fields, in order).
_KNOWN = (
    files.c.path,
    files.c.size,
    files.c.mtime_ns,
    files.c.inode,
    files.c.state,
    files.c.error_code,
)


class Catalog:
    def __init__(self, session_factory: sessionmaker[Session], *, clock: Clock = utc_now) -> None:
        self._session_factory = session_factory
        self._clock = clock

    # ── sources ────────────────────────────────────────────────────────────────
    @transactional
    def add_source(self, path: Path, *, resolved: bool = False) -> dict[str, Any]:
        """Register a folder (idempotent); returns its row. ``resolved``: ``path`` is
        already its real path, opened without following a link just now (organize's
        destination), and is not resolved again."""
        real = str(path) if resolved else str(path.resolve())
        with write_session(self._session_factory) as session:
            session.execute(
                self._insert(sources)
                .values(path=real, added_at=self._clock())
                .on_conflict_do_nothing(index_elements=["path"])
            )
            row = session.execute(select(sources).where(sources.c.path == real)).one()
            return dict(row._mapping)

    def source_paths(self) -> list[str]:
        """Every registered source folder."""
        with read_session(self._session_factory) as session:
            return list(session.scalars(select(sources.c.path).order_by(sources.c.path)))

    @transactional
    def mark_scanned(self, source_ids: Iterable[int]) -> None:
        with write_session(self._session_factory) as session:
            session.execute(
                update(sources)
                .where(sources.c.id.in_(list(source_ids)))
                .values(scanned_at=self._clock())
            )

    # ── files ──────────────────────────────────────────────────────────────────
    def known_files(self, source_id: int) -> dict[str, KnownFile]:
        query = select(*_KNOWN).where(files.c.source_id == source_id)
        with read_session(self._session_factory) as session:
            return {row.path: KnownFile(*row[1:]) for row in session.execute(query)}

    def known_files_within(
        self, source_id: int, exact: Sequence[str], folders: Sequence[str]
    ) -> dict[str, KnownFile]:
        """The catalogued files of ``source_id`` at the stored paths ``exact`` or below
        ``folders``: what a scan of given paths compares with (not the whole source)."""
        found: dict[str, KnownFile] = {}
        of_source = files.c.source_id == source_id
        with read_session(self._session_factory) as session:
            for start in range(0, len(exact), 500):
                query = select(*_KNOWN).where(
                    of_source, files.c.path.in_(exact[start : start + 500])
                )
                found.update((row.path, KnownFile(*row[1:])) for row in session.execute(query))
            for start in range(0, len(folders), 50):
                # substr, not LIKE: SQLite's LIKE ignores case, and names may hold % and _.
                below_any = or_(
                    *(
                        func.substr(files.c.path, 1, len(folder) + 1) == folder + "/"
                        for folder in folders[start : start + 50]
                    )
                )
                query = select(*_KNOWN).where(of_source, below_any)
                found.update((row.path, KnownFile(*row[1:])) for row in session.execute(query))
        return found

    def ignored_counts(self, source_ids: Iterable[int]) -> dict[int, int]:
        """How many files of each source are not media (``ignored``): what a scan's
        summary reports beside its items."""
        ids = list(source_ids)
        query = (
            select(files.c.source_id, func.count())
            .where(files.c.source_id.in_(ids), files.c.state == IGNORED)
            .group_by(files.c.source_id)
        )
        with read_session(self._session_factory) as session:
            found = {source_id: count for source_id, count in session.execute(query)}
        return {source_id: found.get(source_id, 0) for source_id in ids}

    @transactional
    def mark_missing(self, source_id: int, paths: list[str]) -> int:
        now = self._clock()
        marked = 0
        with write_session(self._session_factory) as session:
            for start in range(0, len(paths), 500):
                marked += changed_rows(
                    session,
                    update(files)
                    .where(
                        files.c.source_id == source_id,
                        files.c.path.in_(paths[start : start + 500]),
                        files.c.state.not_in([MISSING, QUARANTINED]),
                    )
                    .values(state=MISSING, updated_at=now),
                )
        return marked

    @transactional
    def record(self, reports: list[FileReport]) -> None:
        """Write the findings of a batch of inspected files in one transaction.
        Re-recording a report changes nothing (items may run twice after a crash)."""
        if not reports:
            return
        with write_session(self._session_factory) as session:
            self.record_in(session, reports)

    def record_in(
        self, session: Session, reports: list[FileReport], *, refresh: bool = False
    ) -> None:
        """``record`` inside the caller's transaction (a scan's fenced item write);
        ``refresh`` as in ``record_reports``."""
        record_reports(session, reports, self._clock(), refresh=refresh)

    # ── queries ────────────────────────────────────────────────────────────────
    def assets(
        self,
        *,
        since: str | None = None,
        camera: str | None = None,
        place: str | None = None,
        type: str | None = None,
        limit: int = 1000,
        sort: str = "taken-utc",
        curation: CurationFilter | None = None,
        person: int | None = None,
    ) -> list[dict[str, Any]]:
        """Assets with at least one present file, oldest capture first (by the UTC
        instant when known, floating photos by their wall clock: ``taken_order``).
        ``place`` matches a country code exactly, or is contained in the country,
        region or city name (case-insensitive). ``type``: photo, video or live (a Live
        Photo or Motion Photo). A Live Photo's motion part is not listed on its own:
        its still carries it (``motion_asset_id``)."""
        return list(
            self.iter_assets(
                since=since,
                camera=camera,
                place=place,
                type=type,
                limit=limit,
                sort=sort,
                curation=curation,
                person=person,
            )
        )

    def iter_assets(
        self,
        *,
        since: str | None = None,
        camera: str | None = None,
        place: str | None = None,
        type: str | None = None,
        limit: int | None = None,
        page_size: int = 1000,
        sort: str = "taken-utc",
        curation: CurationFilter | None = None,
        person: int | None = None,
    ) -> Iterator[dict[str, Any]]:
        """``assets`` one keyset page at a time (a bounded read per page, whatever
        the library's size), in the order ``sort`` names (``library.ordering``)."""
        return listings.iter_assets(
            self._session_factory,
            since=since,
            camera=camera,
            place=place,
            type=type,
            limit=limit,
            page_size=page_size,
            sort=sort,
            curation=curation,
            person=person,
        )

    def files(self, *, states: Iterable[str] | None = None) -> list[dict[str, Any]]:
        return listings.list_files(self._session_factory, states=states)

    def duplicates(self) -> list[dict[str, Any]]:
        """Exact duplicates: assets with more than one present file, with the files."""
        return list(self.iter_duplicates())

    def iter_duplicates(self, page_size: int = 500) -> Iterator[dict[str, Any]]:
        """``duplicates`` one page at a time, by asset id."""
        after = 0
        while True:
            groups, after_next = self.duplicate_page(after=after, limit=page_size)
            yield from groups
            if after_next is None:
                return
            after = after_next

    def duplicate_page(
        self, *, after: int = 0, limit: int = 100
    ) -> tuple[list[dict[str, Any]], int | None]:
        """At most ``limit`` exact-duplicate groups of assets with an id above
        ``after``, by asset id, and the ``after`` of the next page (None at the end)."""
        return listings.duplicate_page(self._session_factory, after=after, limit=limit)

    # ── organize (called inside the organize journal's transaction) ────────────
    record_organized = staticmethod(placed.record_organized)
    record_unorganized = staticmethod(placed.record_unorganized)

    # ── dedupe (called inside the dedupe journal's transaction) ────────────────
    record_quarantined = staticmethod(placed.record_quarantined)
    record_restored = staticmethod(placed.record_restored)
    record_purged = staticmethod(placed.record_purged)

    def _insert(self, table: Any) -> postgresql.Insert | sqlite.Insert:
        """An INSERT of this database's dialect (both have ``on_conflict_do_nothing``)."""
        return insert_for(self._session_factory, table)


__all__ = [
    "ASSET_TYPES",
    "FAILED",
    "IGNORED",
    "MISSING",
    "PRESENT",
    "QUARANTINED",
    "SIDECAR",
    "Catalog",
    "FileReport",
    "KnownFile",
    "listing_session",
    "place_matches",
    "type_matches",
]
