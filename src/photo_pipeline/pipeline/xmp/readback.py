"""Reading curation back from XMP: a sidecar another program changed (Lightroom set a
rating), read at the next scan or watch event, and the rating and keywords embedded in
a photo that has no sidecar, read once.

The rule, field by field (rating, favourite, reject, tags, albums): a sidecar field
that differs from what the catalogue last wrote to or read from it (``xmp_sidecars``'
``fields``) was changed by another program, at the sidecar's mtime. It is taken into
the catalogue when that is later than the field's own last change in the catalogue
(``curation_field_changes``; never changed: always); otherwise the catalogue's value
is newer and stays, and the writer puts it in the sidecar. A field the sidecar holds as
last written is left alone. What is taken in is a curation change like any other (the
UI shows it), but not written back: when the catalogue then holds exactly what the
sidecar does, the asset leaves the outbox. A sidecar whose stamp (size and mtime) is
the one last written or read is not read at all. People (MWG face regions) follow the
same rule as one field, ``regions`` (``.regions``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import delete, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import (
    asset_curation,
    assets,
    curation_field_changes,
    curation_pending,
    xmp_sidecars,
)
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.media.curation_blocks import may_hold_curation
from photo_pipeline.media.errors import MediaError
from photo_pipeline.media.exiftool import ExiftoolError
from photo_pipeline.media.sidecar import MAX_SIDECAR_BYTES
from photo_pipeline.media.xmp import XmpCuration, read_curation, read_sidecar
from photo_pipeline.media.xmp_regions import Regions
from photo_pipeline.pipeline import curation
from photo_pipeline.pipeline.curation.assets import chunks
from photo_pipeline.pipeline.curation.changes import FIELDS
from photo_pipeline.pipeline.curation.filters import curation_fields
from photo_pipeline.pipeline.files import roots
from photo_pipeline.pipeline.xmp.fields import as_xmp
from photo_pipeline.pipeline.xmp.records import save_sidecar
from photo_pipeline.pipeline.xmp.regions import FIELD as REGIONS
from photo_pipeline.pipeline.xmp.regions import regions_agree, take_regions
from photo_pipeline.pipeline.xmp.sidecar_path import photos_of, sidecar_of

log = logging.getLogger(__name__)

_DEFAULTS: dict[str, Any] = {
    "rating": 0,
    "favorite": False,
    "rejected": False,
    "tags": [],
    "albums": [],
}
# What a photo's own metadata may say (no favourite, no albums).
_EMBEDDED_FIELDS = ("rating", "rejected", "tags")


def assets_of_hashes(factory: sessionmaker[Session], hashes: Iterable[str]) -> list[int]:
    """The ids of the assets of these content hashes (a scan's reports)."""
    wanted = sorted(set(hashes))
    found: list[int] = []
    with read_session(factory) as session:
        for at in range(0, len(wanted), 500):
            found += session.scalars(
                select(assets.c.id).where(assets.c.content_hash.in_(wanted[at : at + 500]))
            )
    return sorted(found)


def readback(factory: sessionmaker[Session], asset_ids: list[int]) -> dict[str, int]:
    """Read the sidecars (or, once, the photos) of ``asset_ids`` and take into the
    catalogue the fields another program changed more recently (the module's rule).
    Returns counts: ``read`` (sidecars or photos read), ``taken`` (fields taken)."""
    allowed = roots.library_roots(factory)
    counts = {"read": 0, "taken": 0}
    for chunk in chunks(sorted(set(asset_ids))):
        with read_session(factory) as session:
            photos = photos_of(session, chunk)
            seen = {
                row.asset_id: row
                for row in session.execute(
                    select(xmp_sidecars).where(xmp_sidecars.c.asset_id.in_(chunk))
                )
            }
            changed = _field_times(session, chunk)
        photos_read: dict[int, str] = {}  # asset -> embedded or none, recorded at once
        for asset_id, photo in photos.items():
            row = seen.get(asset_id)
            sidecar = sidecar_of(photo)
            try:
                if sidecar.exists:
                    taken = _from_sidecar(factory, asset_id, sidecar.path, row, changed, allowed)
                elif row is None:
                    taken = _from_photo(factory, asset_id, photo, changed, allowed)
                    if taken is not None:
                        photos_read[asset_id] = "embedded" if taken else "none"
                else:
                    continue
            except (OSError, ExiftoolError, MediaError, roots.PathOutsideRoots) as exc:
                log.warning("%s: curation not read back (%s)", sidecar.path, exc)
                continue
            if taken is not None:
                counts["read"] += 1
                counts["taken"] += taken
        if photos_read:
            with write_session(factory) as session:  # one commit per chunk, not per photo
                now = utc_now()
                for asset_id, state in photos_read.items():
                    save_sidecar(session, asset_id, state=state, now=now)
    return counts


def _from_sidecar(
    factory: sessionmaker[Session],
    asset_id: int,
    path: str,
    row: Any,
    changed: dict[tuple[int, str], datetime],
    allowed: tuple[str, ...],
) -> int | None:
    info = os.stat(path)
    stamp = f"{info.st_size}:{info.st_mtime_ns}"
    if row is not None and row.stamp == stamp and row.path is not None:
        return None  # as last written or read
    if info.st_size > MAX_SIDECAR_BYTES:
        return None
    # Read through a pinned stand-in: confined on the descriptor, and an ASCII-safe
    # name for exiftool (a name that is not UTF-8 cannot be sent to it as it is).
    with roots.pinned(path, allowed) as opened:
        read = read_sidecar(opened.path)
    if read is None:
        return None  # no exiftool
    found, regions = read
    edited = datetime.fromtimestamp(info.st_mtime_ns / 1e9, UTC)
    synced = (row.fields if row is not None else None) or {}
    now = found.fields()
    taken = {}
    for name in FIELDS:
        last = synced.get(name)
        if last is not None and now[name] == last:
            continue  # not changed by another program
        if last is None and now[name] == _DEFAULTS[name]:
            continue  # a sidecar that says nothing of it
        ours = changed.get((asset_id, name))
        if ours is None or edited > ours:
            taken[name] = now[name]
    _take(factory, asset_id, taken)
    placed = take_regions(
        factory,
        asset_id,
        regions,
        last=synced.get(REGIONS),
        edited=edited,
        ours=changed.get((asset_id, REGIONS)),
    )
    _settle(factory, asset_id, path, now, stamp, "read", regions)
    return len(taken) + (1 if placed else 0)


def _from_photo(
    factory: sessionmaker[Session],
    asset_id: int,
    photo: str,
    changed: dict[tuple[int, str], datetime],
    allowed: tuple[str, ...],
) -> int | None:
    with roots.pinned(photo, allowed) as opened:
        if not may_hold_curation(opened.path):
            # Most photos: no XMP or IPTC block in the headers, nothing to ask exiftool.
            return 0
        found = read_curation(opened.path, embedded=True)
    if found is None:
        return None
    now = found.fields()
    taken = {
        name: now[name]
        for name in _EMBEDDED_FIELDS
        if now[name] != _DEFAULTS[name] and (asset_id, name) not in changed
    }
    _take(factory, asset_id, taken)
    return len(taken)


def take_from_sidecar(
    factory: sessionmaker[Session],
    asset_id: int,
    path: str,
    found: XmpCuration,
    regions: Regions | None = None,
) -> None:
    """The catalogue takes every curation field the sidecar at ``path`` holds (an
    undo put it back), and the asset leaves the outbox. Its ``regions`` are
    remembered as read; the people stay as they are (a later people change writes
    them again)."""
    info = os.stat(path)
    current = _current(factory, asset_id)
    now = found.fields()
    _take(factory, asset_id, {k: v for k, v in now.items() if current.get(k) != v})
    stamp = f"{info.st_size}:{info.st_mtime_ns}"
    _settle(factory, asset_id, path, now, stamp, "read", regions)


def _current(factory: sessionmaker[Session], asset_id: int) -> dict[str, Any]:
    with read_session(factory) as session:
        return as_xmp(curation_fields(session, [asset_id])[asset_id]).fields()


def _take(factory: sessionmaker[Session], asset_id: int, taken: dict[str, Any]) -> None:
    """Make the catalogue hold ``taken`` (field -> value as ``XmpCuration.fields``)."""
    ids = [asset_id]
    try:
        if "rating" in taken:
            curation.set_rating(factory, ids, int(taken["rating"]))
        if "favorite" in taken:
            curation.set_favorite(factory, ids, bool(taken["favorite"]))
        if "rejected" in taken:
            curation.set_rejected(factory, ids, bool(taken["rejected"]))
        current = _current(factory, asset_id) if {"tags", "albums"} & set(taken) else {}
        if "tags" in taken:
            have = {t.casefold(): t for t in current["tags"]}
            want = {t.casefold(): t for t in taken["tags"]}
            for key, tag in want.items():
                if key not in have:
                    curation.add_tag(factory, tag, ids)
            for key, tag in have.items():
                if key not in want:
                    curation.remove_tag(factory, tag, ids)
        if "albums" in taken:
            have = {a.casefold(): a for a in current["albums"]}
            want = {a.casefold(): a for a in taken["albums"]}
            for key, name in want.items():
                if key not in have:
                    made, _ = curation.create_album(factory, name)
                    curation.add_to_album(factory, made["id"], ids)
            for key, name in have.items():
                if key not in want:
                    curation.remove_from_album(factory, name, ids)
    except PhotoPipelineError as exc:  # a tag or album name the catalogue refuses
        log.warning("asset %s: curation from XMP not all taken (%s)", asset_id, exc.detail)


@transactional
def _settle(
    factory: sessionmaker[Session],
    asset_id: int,
    path: str,
    fields: dict[str, Any],
    stamp: str,
    state: str,
    regions: Regions | None = None,
) -> None:
    """Remember what the sidecar holds; when the catalogue holds the same, there is
    nothing to write: the asset leaves the outbox."""
    if regions is not None:
        fields = {**fields, REGIONS: regions.record()}
    with write_session(factory) as session:
        save_sidecar(
            session, asset_id, path=path, fields=fields, stamp=stamp, state=state, now=utc_now()
        )
        curation_agrees = as_xmp(curation_fields(session, [asset_id])[asset_id]).fields() == {
            k: v for k, v in fields.items() if k != REGIONS
        }
        if curation_agrees and (regions is None or regions_agree(session, asset_id, regions)):
            version = session.scalar(
                select(asset_curation.c.version).where(asset_curation.c.asset_id == asset_id)
            )
            session.execute(
                delete(curation_pending).where(
                    curation_pending.c.asset_id == asset_id,
                    curation_pending.c.version <= (version or 0),
                )
            )


def _field_times(session: Session, ids: list[int]) -> dict[tuple[int, str], datetime]:
    rows = session.execute(
        select(
            curation_field_changes.c.asset_id,
            curation_field_changes.c.field,
            curation_field_changes.c.changed_at,
        ).where(curation_field_changes.c.asset_id.in_(ids))
    )
    return {(row.asset_id, row.field): row.changed_at for row in rows}
