"""Recording what inspecting files found: their rows, and the asset of each content
(created on first sight), in the caller's transaction."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import ColumnElement, and_, exists, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.schema import assets, files, timeshift_entries
from photo_pipeline.db.text import storable
from photo_pipeline.media.places import ZoneAndPlace, sort_instant
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.file_states import (
    FAILED,
    IGNORED,
    MISSING,
    PRESENT,
    SIDECAR,
)
from photo_pipeline.pipeline.library import live_photos
from photo_pipeline.pipeline.library.map_grid import map_cell

if TYPE_CHECKING:  # the decoders load on first use, not with the catalogue
    from photo_pipeline.media import PhotoMetadata


SIDECARS_UNREAD = "?"


@dataclass(frozen=True)
class FileReport:
    """What inspecting one file found; made in a worker process, recorded here."""

    source_id: int
    path: str  # stored form (pipeline.files.paths)
    size: int = 0
    mtime_ns: int = 0
    inode: int = 0
    content_hash: str | None = None
    sha256: str | None = None  # read with content_hash (media.hash_file_digests)
    metadata: PhotoMetadata | None = None
    error: tuple[str, str] | None = None
    vanished: bool = False
    role: str = "media"  # media, sidecar (SIDECAR) or ignored (IGNORED): not media
    located: ZoneAndPlace | None = None  # zone and place (pipeline.ingest.places.locate_reports)
    # The sidecars it was read with (pipeline.ingest.sidecars): when they differ from those of
    # its last read, its asset follows them; otherwise an asset keeps what was first read.
    # SIDECARS_UNREAD: one could not be read this time (its asset is left as it is).
    sidecars: str | None = None


def record_reports(
    session: Session, reports: list[FileReport], now: datetime, *, refresh: bool = False
) -> None:
    """Write the findings of ``reports`` in ``session``'s transaction. Re-recording a
    report changes nothing (items may run twice after a crash). With ``refresh`` (a
    scan that reads every file again: ``import --reread``), each asset read takes what
    its file and sidecars say now, not what was first read (``_refresh_asset``)."""
    touched: set[int | None] = set()
    for report in reports:
        touched |= _record_one(session, report, now, refresh)
    # The words they are searched by: their file names, camera and place may be new.
    search_index.refresh(session, touched)


def _record_one(
    session: Session, report: FileReport, now: datetime, refresh: bool
) -> set[int | None]:
    """Record one report; the assets whose words may have changed (its own, and the
    one its path held before)."""
    where = and_(files.c.source_id == report.source_id, files.c.path == report.path)
    if report.vanished:
        before = set(session.scalars(select(files.c.asset_id).where(where)))
        session.execute(update(files).where(where).values(state=MISSING, updated_at=now))
        return before
    asset_id = None
    if report.metadata is not None and report.content_hash is not None:
        asset_id = _asset_id(
            session, report.content_hash, report.size, report.metadata, now, report.located
        )
        if report.sha256 is not None:
            _fill_sha256(session, asset_id, report.sha256)
    state, error = FAILED if report.error else PRESENT, report.error
    if report.role == IGNORED:
        state, error = IGNORED, None
    elif report.role == SIDECAR:
        state, error = FAILED, (SIDECAR, "a sidecar file: it travels with its photo")
    unread = report.sidecars == SIDECARS_UNREAD
    if refresh and not unread and asset_id is not None and report.metadata is not None:
        _refresh_asset(session, asset_id, report, report.metadata, now)
    values = {
        "size": report.size,
        "mtime_ns": report.mtime_ns,
        "inode": report.inode,
        "state": state,
        "asset_id": asset_id,
        "error_code": error[0] if error else None,
        "error_message": storable(error[1]) if error else None,
        "updated_at": now,
        "sidecars": None if unread else report.sidecars,
    }
    known = session.execute(
        select(files.c.id, files.c.sidecars, files.c.asset_id).where(where)
    ).first()
    if known is not None:
        # Read again with other sidecars than last time (added, edited or removed); one
        # that failed to read (a time-out, say) changes neither the row nor the asset.
        if unread:
            values["sidecars"] = known.sidecars
        session.execute(update(files).where(files.c.id == known.id).values(**values))
        followed = not refresh and not unread and known.sidecars != report.sidecars
        if followed and asset_id is not None and report.metadata is not None:
            _follow_sidecars(session, asset_id, report, report.metadata, now)
        _pair(session, asset_id, report)
        return {asset_id, known.asset_id}
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
            _follow_new_sidecars(session, asset_id, report, refresh, now)
            _pair(session, asset_id, report)
            return {asset_id}
    session.execute(
        insert_for(session, files).values(
            source_id=report.source_id, path=report.path, created_at=now, **values
        )
    )
    _follow_new_sidecars(session, asset_id, report, refresh, now)
    _pair(session, asset_id, report)
    return {asset_id}


def _follow_new_sidecars(
    session: Session, asset_id: int | None, report: FileReport, refresh: bool, now: datetime
) -> None:
    """A file new to the catalogue that has sidecars: its asset follows them even when
    its content was first catalogued from a copy without (``IMG_1.JPG`` in two folders,
    one with the user's ``IMG_1.xmp``): the sidecar is the user's word on that content."""
    if refresh or report.sidecars in (None, SIDECARS_UNREAD):
        return
    if asset_id is not None and report.metadata is not None:
        _follow_sidecars(session, asset_id, report, report.metadata, now)


def _pair(session: Session, asset_id: int | None, report: FileReport) -> None:
    """A Live Photo's halves become one (pipeline.library.live_photos), in this transaction."""
    if asset_id is not None:
        live_photos.pair_in(session, asset_id, report.source_id, report.path)


def _asset_id(
    session: Session,
    content_hash: str,
    size: int,
    md: PhotoMetadata,
    now: datetime,
    located: ZoneAndPlace | None = None,
) -> int:
    """The asset of this content, created on first sight."""
    session.execute(
        insert_for(session, assets)
        .values(
            content_hash=content_hash,
            size=size,
            created_at=now,
            updated_at=now,
            **_what_it_is(md),
            **_where_and_when(md, located),
        )
        .on_conflict_do_nothing(index_elements=["content_hash"])
    )
    asset_id: int | None = session.scalar(
        select(assets.c.id).where(assets.c.content_hash == content_hash)
    )
    if asset_id is None:  # inserted or already there, in this transaction
        raise RuntimeError(f"no asset row for {content_hash} after its insert")
    return asset_id


def _fill_sha256(session: Session, asset_id: int, sha256: str) -> None:
    """Give the asset the SHA-256 read with its BLAKE3 when it has none: new, or
    catalogued before revision 0021 (filled so as each of its files is read again)."""
    session.execute(
        update(assets)
        .where(assets.c.id == asset_id, assets.c.sha256.is_(None))
        .values(sha256=sha256)
    )


def _what_it_is(md: PhotoMetadata) -> dict[str, Any]:
    """An asset's format, size in pixels and camera details, as read from its file."""
    return {
        "format": md.format,
        "mime": md.mime,
        "width": md.width,
        "height": md.height,
        "orientation": md.orientation,
        "make": md.make,
        "model": md.model,
        "lens": md.lens,
        "focal_length_mm": md.focal_length_mm,
        "f_number": md.f_number,
        "exposure_seconds": md.exposure_seconds,
        "iso": md.iso,
        "kind": md.kind,
        "duration_seconds": md.duration,
        "video_codec": md.video_codec,
        "frame_rate": md.frame_rate,
        "content_identifier": md.content_identifier,
        "is_motion_photo": md.motion_video is not None,
    }


def _where_and_when(md: PhotoMetadata, located: ZoneAndPlace | None) -> dict[str, Any]:
    """An asset's capture time, zone, place and position, as read from its file."""
    taken = md.taken if located is None else located.zone
    place = located.place if located is not None else None
    return {
        "taken_local": taken.local.isoformat(),
        "taken_offset_minutes": taken.offset_minutes,
        "taken_utc": taken.utc,
        "taken_source": md.taken.source,
        "taken_order": sort_instant(taken.local, taken.utc),
        "tz_name": located.zone.tz_name if located else None,
        "tz_source": located.zone.tz_source if located else None,
        "country_code": place.country_code if place else None,
        "country": place.country if place else None,
        "region": place.region if place else None,
        "city": place.city if place else None,
        "district": place.district if place else None,
        "gps_latitude": md.gps_latitude,
        "gps_longitude": md.gps_longitude,
        "gps_altitude": md.gps_altitude,
        "map_cell": map_cell(md.gps_latitude, md.gps_longitude),
    }


def _follow_sidecars(
    session: Session, asset_id: int, report: FileReport, md: PhotoMetadata, now: datetime
) -> None:
    """A file read again with other sidecars than last time gives its asset the time
    and place it and its sidecars say now. A date the user shifted (``timeshift``) is
    left as it is: theirs is the later word."""
    session.execute(
        update(assets)
        .where(assets.c.id == asset_id, ~_shifted())
        .values(updated_at=now, **_where_and_when(md, report.located))
    )


def _refresh_asset(
    session: Session, asset_id: int, report: FileReport, md: PhotoMetadata, now: datetime
) -> None:
    """A file read again on request (``import --reread``: after an upgrade that reads
    more, say) gives its asset everything it and its sidecars say now; a date the user
    shifted stays, as in ``_follow_sidecars``."""
    session.execute(
        update(assets).where(assets.c.id == asset_id).values(updated_at=now, **_what_it_is(md))
    )
    _follow_sidecars(session, asset_id, report, md, now)


def _shifted() -> ColumnElement[bool]:
    """The asset has a date the user shifted (a ``timeshift`` not undone)."""
    return exists().where(
        timeshift_entries.c.asset_id == assets.c.id, timeshift_entries.c.undone_at.is_(None)
    )
