"""The library's rows: sources, files and assets (the pipeline's side of the database)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from sqlalchemy import and_, bindparam, exists, func, or_, select, text, tuple_, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for, is_postgresql
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, sources
from photo_pipeline.jobs.service import Clock, utc_now
from photo_pipeline.media.places import ZoneAndPlace, sort_instant
from photo_pipeline.pipeline import live_photos

if TYPE_CHECKING:  # the decoders load on first use, not with the catalogue
    from photo_pipeline.media import PhotoMetadata

PRESENT, FAILED, MISSING = "present", "failed", "missing"
# Not media (a README, notes.txt, Thumbs.db): listed so a rescan skips it unchanged,
# never an asset, never a failure.
IGNORED = "ignored"
# A .xmp/.aae sidecar: no asset of its own, it travels with its photo (organize,
# dedupe). Recorded as before sidecars had a name: failed, with this error code.
SIDECAR = "sidecar"
# Moved into the quarantine by dedupe (its path is where it came from and where an
# undo puts it back); never "missing" to a scan.
QUARANTINED = "quarantined"


@contextmanager
def listing_session(factory: sessionmaker[Session]) -> Iterator[Session]:
    """A read session for one page of a listing. PostgreSQL's JIT would compile the
    plan of a page whose estimated cost (a walk of a whole index) passes
    jit_above_cost: 80 ms of compiling for a page read in 3 ms."""
    with read_session(factory) as session:
        if is_postgresql(session):
            session.execute(text("SET LOCAL jit = off"))
        yield session


class KnownFile(NamedTuple):
    size: int
    mtime_ns: int
    inode: int
    state: str


@dataclass(frozen=True)
class FileReport:
    """What inspecting one file found; made in a worker process, recorded here."""

    source_id: int
    path: str  # stored form (pipeline.paths)
    size: int = 0
    mtime_ns: int = 0
    inode: int = 0
    content_hash: str | None = None
    metadata: PhotoMetadata | None = None
    error: tuple[str, str] | None = None
    vanished: bool = False
    role: str = "media"  # media, sidecar (SIDECAR) or ignored (IGNORED): not media
    located: ZoneAndPlace | None = None  # zone and place (pipeline.places.locate_reports)


class Catalog:
    def __init__(self, session_factory: sessionmaker[Session], *, clock: Clock = utc_now) -> None:
        self._session_factory = session_factory
        self._clock = clock

    # ── sources ────────────────────────────────────────────────────────────────
    @transactional
    def add_source(self, path: Path) -> dict[str, Any]:
        """Register a folder (idempotent); returns its row."""
        resolved = str(path.resolve())
        with write_session(self._session_factory) as session:
            session.execute(
                self._insert(sources)
                .values(path=resolved, added_at=self._clock())
                .on_conflict_do_nothing(index_elements=["path"])
            )
            row = session.execute(select(sources).where(sources.c.path == resolved)).one()
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
        query = select(
            files.c.path, files.c.size, files.c.mtime_ns, files.c.inode, files.c.state
        ).where(files.c.source_id == source_id)
        with read_session(self._session_factory) as session:
            return {row.path: KnownFile(*row[1:]) for row in session.execute(query)}

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

    def record_in(self, session: Session, reports: list[FileReport]) -> None:
        """``record`` inside the caller's transaction (a scan's fenced item write)."""
        now = self._clock()
        for report in reports:
            self._record_one(session, report, now)

    def _record_one(self, session: Session, report: FileReport, now: datetime) -> None:
        where = and_(files.c.source_id == report.source_id, files.c.path == report.path)
        if report.vanished:
            session.execute(update(files).where(where).values(state=MISSING, updated_at=now))
            return
        asset_id = None
        if report.metadata is not None and report.content_hash is not None:
            asset_id = self._asset_id(
                session, report.content_hash, report.size, report.metadata, now, report.located
            )
        state, error = FAILED if report.error else PRESENT, report.error
        if report.role == IGNORED:
            state, error = IGNORED, None
        elif report.role == SIDECAR:
            state, error = FAILED, (SIDECAR, "a sidecar file: it travels with its photo")
        values = {
            "size": report.size,
            "mtime_ns": report.mtime_ns,
            "inode": report.inode,
            "state": state,
            "asset_id": asset_id,
            "error_code": error[0] if error else None,
            "error_message": error[1] if error else None,
            "updated_at": now,
        }
        if changed_rows(session, update(files).where(where).values(**values)):
            self._pair(session, asset_id, report)
            return
        if asset_id is not None:
            # Same content at a new path while its old path is gone: a move, not a copy.
            moved = session.scalar(
                select(files.c.id)
                .where(files.c.asset_id == asset_id, files.c.state == MISSING)
                .order_by(files.c.id)
                .limit(1)
            )
            if moved is not None:
                session.execute(
                    update(files)
                    .where(files.c.id == moved)
                    .values(source_id=report.source_id, path=report.path, **values)
                )
                self._pair(session, asset_id, report)
                return
        session.execute(
            self._insert(files).values(
                source_id=report.source_id, path=report.path, created_at=now, **values
            )
        )
        self._pair(session, asset_id, report)

    @staticmethod
    def _pair(session: Session, asset_id: int | None, report: FileReport) -> None:
        """A Live Photo's halves become one (pipeline.live_photos), in this transaction."""
        if asset_id is not None:
            live_photos.pair_in(session, asset_id, report.source_id, report.path)

    def _asset_id(
        self,
        session: Session,
        content_hash: str,
        size: int,
        md: PhotoMetadata,
        now: datetime,
        located: ZoneAndPlace | None = None,
    ) -> int:
        """The asset of this content, created on first sight."""
        taken = md.taken if located is None else located.zone
        place = located.place if located is not None else None
        session.execute(
            self._insert(assets)
            .values(
                content_hash=content_hash,
                size=size,
                format=md.format,
                mime=md.mime,
                width=md.width,
                height=md.height,
                orientation=md.orientation,
                taken_local=taken.local.isoformat(),
                taken_offset_minutes=taken.offset_minutes,
                taken_utc=taken.utc,
                taken_source=md.taken.source,
                taken_order=sort_instant(taken.local, taken.utc),
                tz_name=located.zone.tz_name if located else None,
                tz_source=located.zone.tz_source if located else None,
                country_code=place.country_code if place else None,
                country=place.country if place else None,
                region=place.region if place else None,
                city=place.city if place else None,
                district=place.district if place else None,
                make=md.make,
                model=md.model,
                lens=md.lens,
                focal_length_mm=md.focal_length_mm,
                f_number=md.f_number,
                exposure_seconds=md.exposure_seconds,
                iso=md.iso,
                gps_latitude=md.gps_latitude,
                gps_longitude=md.gps_longitude,
                gps_altitude=md.gps_altitude,
                kind=md.kind,
                duration_seconds=md.duration,
                video_codec=md.video_codec,
                frame_rate=md.frame_rate,
                content_identifier=md.content_identifier,
                is_motion_photo=md.motion_video is not None,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing(index_elements=["content_hash"])
        )
        asset_id: int | None = session.scalar(
            select(assets.c.id).where(assets.c.content_hash == content_hash)
        )
        if asset_id is None:  # inserted or already there, in this transaction
            raise RuntimeError(f"no asset row for {content_hash} after its insert")
        return asset_id

    # ── queries ────────────────────────────────────────────────────────────────
    def assets(
        self,
        *,
        since: str | None = None,
        camera: str | None = None,
        place: str | None = None,
        type: str | None = None,
        limit: int = 1000,
    ) -> list[dict[str, Any]]:
        """Assets with at least one present file, oldest capture first (by the UTC
        instant when known, floating photos by their wall clock: ``taken_order``).
        ``place`` matches a country code exactly, or is contained in the country,
        region or city name (case-insensitive). ``type``: photo, video or live (a Live
        Photo or Motion Photo). A Live Photo's motion part is not listed on its own:
        its still carries it (``motion_asset_id``)."""
        return list(
            self.iter_assets(since=since, camera=camera, place=place, type=type, limit=limit)
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
    ) -> Iterator[dict[str, Any]]:
        """``assets`` one keyset page at a time (a bounded read per page, whatever
        the library's size)."""
        present_files = (
            select(func.count())
            .where(files.c.asset_id == assets.c.id, files.c.state == PRESENT)
            .correlate(assets)
            .scalar_subquery()
        )
        query = (
            select(
                assets,
                present_files.label("files"),
                live_photos.motion_asset_id().label("motion_asset_id"),
            )
            .where(exists().where(files.c.asset_id == assets.c.id, files.c.state == PRESENT))
            .where(live_photos.shown())
            .order_by(assets.c.taken_order, assets.c.id)
        )
        if type is not None:
            query = query.where(type_matches(type))
        if place:
            query = query.where(place_matches(place))
        if since:
            query = query.where(assets.c.taken_local >= since)
        if camera:
            pattern = f"%{camera.lower()}%"
            query = query.where(
                or_(
                    func.lower(assets.c.make).like(pattern),
                    func.lower(assets.c.model).like(pattern),
                )
            )
        left = limit
        after: tuple[Any, int] | None = None
        while left is None or left > 0:
            page = query.limit(page_size if left is None else min(page_size, left))
            if after is not None:
                page = page.where(tuple_(assets.c.taken_order, assets.c.id) > after)
            with listing_session(self._session_factory) as session:
                rows = [dict(row._mapping) for row in session.execute(page)]
            yield from rows
            if len(rows) < page_size or not rows:
                return
            if left is not None:
                left -= len(rows)
            after = (rows[-1]["taken_order"], rows[-1]["id"])

    def files(self, *, states: Iterable[str] | None = None) -> list[dict[str, Any]]:
        query = (
            select(files, sources.c.path.label("source_path"))
            .join(sources, sources.c.id == files.c.source_id)
            .order_by(files.c.source_id, files.c.path)
        )
        if states is not None:
            query = query.where(files.c.state.in_(list(states)))
        with read_session(self._session_factory) as session:
            return [dict(row._mapping) for row in session.execute(query)]

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
        ``after``, by asset id, and the ``after`` of the next page (None at the end).
        The groups are found by walking ix_files_asset_id_state from ``after``."""
        shared = (
            select(files.c.asset_id)
            .where(files.c.asset_id > after, files.c.state == PRESENT)
            .group_by(files.c.asset_id)
            .having(func.count() > 1)
            .order_by(files.c.asset_id)
            .limit(limit + 1)
        )
        with listing_session(self._session_factory) as session:
            ids = list(session.scalars(shared))
            more = len(ids) > limit
            ids = ids[:limit]
            rows = session.execute(
                select(
                    assets.c.id,
                    assets.c.content_hash,
                    assets.c.size,
                    files.c.path,
                    sources.c.path.label("source_path"),
                )
                .join(files, files.c.asset_id == assets.c.id)
                .join(sources, sources.c.id == files.c.source_id)
                .where(assets.c.id.in_(ids), files.c.state == PRESENT)
                .order_by(assets.c.id, sources.c.path, files.c.path)
            ).all()
        groups: dict[int, dict[str, Any]] = {}
        for row in rows:
            group = groups.setdefault(
                row.id,
                {
                    "asset_id": row.id,
                    "content_hash": row.content_hash,
                    "size": row.size,
                    "files": [],
                },
            )
            group["files"].append({"source": row.source_path, "path": row.path})
        return list(groups.values()), (ids[-1] if more else None)

    # ── organize (called inside the organize journal's transaction) ────────────
    @staticmethod
    def record_organized(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
        """Files organize placed: a moved file's row follows it to its new source and
        path (so a later scan sees it unchanged, not vanished); a copied photo gets a
        row of its own. Repeating a row changes nothing. A few statements for the
        whole batch (one per row took most of organize's journal time, measured)."""
        moved = [
            {"file_id": r["file_id"], **_placed(r, now)}
            for r in rows
            if r["move"] and r["file_id"] is not None
        ]
        if moved:
            # A scan of the destination may have catalogued the new path already.
            session.execute(
                files.delete().where(
                    files.c.source_id == bindparam("source_id"),
                    files.c.path == bindparam("path"),
                    files.c.id != bindparam("file_id"),
                ),
                [{k: r[k] for k in ("source_id", "path", "file_id")} for r in moved],
            )
            session.execute(
                update(files)
                .where(files.c.id == bindparam("file_id"))
                .values({c: bindparam(c) for c in _PLACED_COLUMNS}),
                moved,
            )
        copied = [r for r in rows if not r["move"] and r["photo"]]
        if copied:
            asset_ids = _asset_ids(session, {r["content_hash"] for r in copied})
            statement = insert_for(session, files)
            changed = ("size", "mtime_ns", "inode", "updated_at", "state", "asset_id")
            set_ = {c: statement.excluded[c] for c in (*changed, "error_code", "error_message")}
            session.execute(
                statement.on_conflict_do_update(index_elements=["source_id", "path"], set_=set_),
                [
                    {
                        **_placed(r, now),
                        "state": PRESENT,
                        "asset_id": asset_ids.get(r["content_hash"]),
                        "error_code": None,
                        "error_message": None,
                        "created_at": now,
                    }
                    for r in copied
                ],
            )

    @staticmethod
    def record_unorganized(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
        """The reverse of ``record_organized`` for an undo: a moved file's row goes back
        to its original source and path, a copy's row is deleted."""
        at_dest = files.delete().where(
            files.c.source_id == bindparam("dest_source_id"),
            files.c.path == bindparam("dest_path"),
        )
        copies = [r for r in rows if not r["move"]]
        if copies:
            session.execute(
                at_dest, [{k: r[k] for k in ("dest_source_id", "dest_path")} for r in copies]
            )
        back = []
        for source_id in {r["dest_source_id"] for r in rows if r["move"]}:
            wanted = [r for r in rows if r["move"] and r["dest_source_id"] == source_id]
            ids = _file_ids(session, source_id, [r["dest_path"] for r in wanted])
            back += [
                {"file_id": ids[r["dest_path"]], **_placed(r, now)}
                for r in wanted
                if r["dest_path"] in ids
            ]
        if back:
            session.execute(
                files.delete().where(
                    files.c.source_id == bindparam("source_id"),
                    files.c.path == bindparam("path"),
                    files.c.id != bindparam("file_id"),
                ),
                [{k: r[k] for k in ("source_id", "path", "file_id")} for r in back],
            )
            session.execute(
                update(files)
                .where(files.c.id == bindparam("file_id"))
                .values({c: bindparam(c) for c in _PLACED_COLUMNS}),
                back,
            )

    # ── dedupe (called inside the dedupe journal's transaction) ────────────────
    @staticmethod
    def record_quarantined(session: Session, file_ids: list[int], now: datetime) -> None:
        """Files dedupe moved into the quarantine: no longer present (duplicates and
        listings leave them out), their rows kept for the undo."""
        for start in range(0, len(file_ids), 500):
            session.execute(
                update(files)
                .where(files.c.id.in_(file_ids[start : start + 500]))
                .values(state=QUARANTINED, updated_at=now)
            )

    @staticmethod
    def record_restored(session: Session, rows: list[dict[str, Any]], now: datetime) -> None:
        """Files an undo put back: present again, with what they are on disk now."""
        for row in rows:
            session.execute(
                update(files)
                .where(files.c.id == row["file_id"])
                .values(
                    state=row["state"],
                    size=row["size"],
                    mtime_ns=row["mtime_ns"],
                    inode=row["inode"],
                    updated_at=now,
                )
            )

    @staticmethod
    def record_purged(session: Session, file_ids: list[int]) -> None:
        """Quarantined files deleted for good: their rows go."""
        for start in range(0, len(file_ids), 500):
            session.execute(
                files.delete().where(
                    files.c.id.in_(file_ids[start : start + 500]), files.c.state == QUARANTINED
                )
            )

    def _insert(self, table: Any) -> postgresql.Insert | sqlite.Insert:
        """An INSERT of this database's dialect (both have ``on_conflict_do_nothing``)."""
        return insert_for(self._session_factory, table)


ASSET_TYPES = ("photo", "video", "live")


def type_matches(asset_type: str) -> Any:
    """The SQL condition of ``assets(type=...)``: photo, video, or live (a Live Photo
    with its motion part, or a Motion Photo)."""
    if asset_type == "live":
        motion = assets.alias("motion")
        return assets.c.is_motion_photo.is_(True) | exists().where(motion.c.live_of == assets.c.id)
    if asset_type in ("photo", "video"):
        return assets.c.kind == asset_type
    raise ValueError(f"type must be one of {', '.join(ASSET_TYPES)}, got {asset_type!r}")


def place_matches(text: str) -> Any:
    """The SQL condition of ``assets(place=text)``."""
    needle = text.strip().lower()
    pattern = "%" + needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"
    return or_(
        func.lower(assets.c.country_code) == needle,
        *(
            func.lower(column).like(pattern, escape="\\")
            for column in (assets.c.country, assets.c.region, assets.c.city, assets.c.district)
        ),
    )


_PLACED_COLUMNS = ("source_id", "path", "size", "mtime_ns", "inode", "updated_at")


def _placed(row: dict[str, Any], now: datetime) -> dict[str, Any]:
    """Where a file organize placed (or its undo put back) is now, and its stat."""
    return {
        "source_id": row["source_id"],
        "path": row["path"],
        "size": row["size"],
        "mtime_ns": row["mtime_ns"],
        "inode": row["inode"],
        "updated_at": now,
    }


def _asset_ids(session: Session, hashes: set[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    ordered = sorted(hashes)
    for start in range(0, len(ordered), 500):
        query = select(assets.c.content_hash, assets.c.id).where(
            assets.c.content_hash.in_(ordered[start : start + 500])
        )
        found.update({h: i for h, i in session.execute(query)})
    return found


def _file_ids(session: Session, source_id: int, paths: list[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for start in range(0, len(paths), 500):
        query = select(files.c.path, files.c.id).where(
            files.c.source_id == source_id, files.c.path.in_(paths[start : start + 500])
        )
        found.update({p: i for p, i in session.execute(query)})
    return found
