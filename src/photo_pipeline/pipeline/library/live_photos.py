"""Live Photos: an iPhone still (HEIC/JPEG) and its motion MOV become one asset to show.

Both halves are catalogued as assets of their own content (the MOV is a ``video``
asset), and the MOV's ``live_of`` names the still's asset: listings leave the motion
part out, the still carries it (``motion_asset_id``).

``pair_in(session, asset_id, source_id, path)`` runs in the scan's catalogue write,
inside the fenced transaction that reports the item done, after each file's asset is
recorded. Whichever half is recorded second finds the first:

* by Apple's content identifier when both halves carry one (they must then be equal);
* otherwise by place and time: same source, same folder, same stem (as written, or
  all in lower or upper case; any case of ``.HEIC``/``.JPG``/``.MOV``…), capture
  times within :data:`MAX_APART`, and not two different cameras' (a Nikon photo and
  an iPhone clip of one second, renamed alike by an organize template, are no pair).

Among several candidates the one with the smallest content hash wins, so the pairing
does not depend on the order files were read in (a resumed scan pairs as a clean one).
A half already paired with a partner that still has a present file is not taken again.
"""

from __future__ import annotations

import os
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, ScalarSelect, and_, exists, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import assets, files
from photo_pipeline.pipeline.file_states import PRESENT
from photo_pipeline.pipeline.files import paths

MAX_APART = timedelta(seconds=2)
STILL_FORMATS = frozenset({"heif", "jpeg"})
MOTION_FORMATS = frozenset({"mov", "mp4"})
_STILL_EXTENSIONS = (".heic", ".heif", ".jpg", ".jpeg")
_MOTION_EXTENSIONS = (".mov", ".mp4")

_COLUMNS = (
    assets.c.id,
    assets.c.kind,
    assets.c.format,
    assets.c.content_hash,
    assets.c.content_identifier,
    assets.c.taken_local,
    assets.c.taken_utc,
    assets.c.live_of,
    assets.c.make,
)


def motion_asset_id() -> ScalarSelect[Any]:
    """A column for listings: the still's motion part (its asset id), else NULL."""
    motion = assets.alias("motion")
    return (
        select(motion.c.id)
        .where(motion.c.live_of == assets.c.id)
        .order_by(motion.c.id)
        .limit(1)
        .correlate(assets)
        .scalar_subquery()
    )


def shown() -> ColumnElement[bool]:
    """The condition of an asset listings show: not the motion part of a still that
    is still there (a MOV whose still was deleted shows as a video again)."""
    still_files = files.alias("still_files")
    return (assets.c.live_of.is_(None)) | ~exists().where(
        still_files.c.asset_id == assets.c.live_of, still_files.c.state == PRESENT
    )


def pair_in(session: Session, asset_id: int, source_id: int, path: str) -> int | None:
    """Pair the asset just recorded for ``path`` (stored form) with its other half, if
    there is one; returns the partner's asset id."""
    me = session.execute(select(*_COLUMNS).where(assets.c.id == asset_id)).one()
    if me.kind == "video" and me.format in MOTION_FORMATS:
        if me.live_of is not None and _has_present_file(session, me.live_of):
            return None
        partner = _best(session, me, _candidates(session, me, source_id, path, still=True))
        if partner is not None:
            session.execute(update(assets).where(assets.c.id == me.id).values(live_of=partner))
        return partner
    if me.kind == "photo" and me.format in STILL_FORMATS:
        if _motion_of(session, me.id) is not None:
            return None
        partner = _best(session, me, _candidates(session, me, source_id, path, still=False))
        if partner is not None:
            session.execute(update(assets).where(assets.c.id == partner).values(live_of=me.id))
        return partner
    return None


def _candidates(session: Session, me: Any, source_id: int, path: str, *, still: bool) -> list[Any]:
    """The other half's possible assets: by content identifier, else beside the file."""
    kind, formats = ("photo", STILL_FORMATS) if still else ("video", MOTION_FORMATS)
    found: list[Any] = []
    if me.content_identifier is not None:
        found = list(
            session.execute(
                select(*_COLUMNS).where(
                    assets.c.content_identifier == me.content_identifier,
                    assets.c.kind == kind,
                    assets.c.format.in_(formats),
                )
            )
        )
        if found:
            return found
    folder, name = os.path.split(paths.from_text(path))
    stem = os.path.splitext(name)[0]
    extensions = _STILL_EXTENSIONS if still else _MOTION_EXTENSIONS
    beside = [
        paths.to_text(os.path.join(folder, cased + variant))
        for cased in {stem, stem.lower(), stem.upper()}
        for ext in extensions
        for variant in (ext, ext.upper())
    ]
    rows = session.execute(
        select(*_COLUMNS)
        .join(files, files.c.asset_id == assets.c.id)
        .where(
            files.c.source_id == source_id,
            files.c.path.in_(beside),
            files.c.state == PRESENT,
            assets.c.kind == kind,
            assets.c.format.in_(formats),
        )
    )
    return [
        row
        for row in rows
        # two identifiers that differ say these are two different Live Photos
        if (row.content_identifier is None or me.content_identifier is None)
        and _close_in_time(me, row)
        and _same_maker(me, row)
    ]


def _best(session: Session, me: Any, candidates: list[Any]) -> int | None:
    """The free candidate with the smallest content hash (an order-free choice)."""
    for row in sorted({r.id: r for r in candidates}.values(), key=lambda r: r.content_hash):
        if row.id == me.id:
            continue
        if row.kind == "video":
            taken = row.live_of is not None and row.live_of != me.id
            if taken and _has_present_file(session, row.live_of):
                continue
        else:
            motion = _motion_of(session, row.id)
            if motion is not None and motion != me.id:
                continue
        return int(row.id)
    return None


def _motion_of(session: Session, still_id: int) -> int | None:
    """The motion part paired with this still, if one is."""
    return session.scalar(
        select(assets.c.id).where(assets.c.live_of == still_id).order_by(assets.c.id).limit(1)
    )


def _has_present_file(session: Session, asset_id: int) -> bool:
    return bool(
        session.scalar(
            select(exists().where(and_(files.c.asset_id == asset_id, files.c.state == PRESENT)))
        )
    )


def _same_maker(a: Any, b: Any) -> bool:
    """Not known to come from two different makers' devices."""
    return a.make is None or b.make is None or a.make.casefold() == b.make.casefold()


def _close_in_time(a: Any, b: Any) -> bool:
    """Capture instants within MAX_APART: by UTC when both are known, else by the
    wall clocks (an iPhone writes both halves with the same clock)."""
    if a.taken_utc is not None and b.taken_utc is not None:
        return bool(abs(a.taken_utc - b.taken_utc) <= MAX_APART)
    try:
        apart = datetime.fromisoformat(a.taken_local) - datetime.fromisoformat(b.taken_local)
    except ValueError:
        return False
    return abs(apart) <= MAX_APART
