"""People in XMP sidecars: a named person's confirmed faces written as MWG regions
(``media.xmp_regions``) beside the curation, and the named face regions another
program wrote (Lightroom, digiKam, Picasa) read back.

Written: each face the user placed (``assigned = "user"``; naming a person confirms
its faces) in a named person, not called "no face". Unnamed faces, and faces the
grouping only guessed, are not: a name in a region is a fact to Lightroom and digiKam
(they show it as confirmed), and an unnamed box is nothing they cannot find
themselves — writing every detected face would put a sidecar beside every photo with
a face. A change of people (a name, a merge, a move, "not them", "not a face") queues
the photos it touches in the curation outbox (``pipeline.faces.people``), field
``regions``; ``xmp_write`` writes them.

Read back, by the curation's rule (``.readback``): when the sidecar's named face
regions differ from those last written or read and the sidecar is newer than the
asset's last people change here, each named region is matched to a face of the asset
by overlap (``media.xmp_regions.match``) and the face goes to the person of that name
(made when there is none), as a user decision. A region no face matches (a face our
detector did not find, or not looked for yet) is not made a face: a face row is an
embedding the grouping compares, and the region has none. It stays in the sidecar
(every write keeps it) and in the sidecar's record, and is matched again when the
faces job finds the photo's faces (:func:`name_new_faces`): on an import, the scan
reads the sidecars before any face is found.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, faces, people, xmp_sidecars
from photo_pipeline.media.xmp_regions import (
    Box,
    Region,
    Regions,
    WantedRegions,
    match,
    stored_size,
    to_stored,
)
from photo_pipeline.pipeline.curation.assets import chunks
from photo_pipeline.pipeline.faces.assignments import USER
from photo_pipeline.pipeline.faces.people import REGIONS, place_named

FIELD = REGIONS  # in curation_field_changes and xmp_sidecars.fields
log = logging.getLogger(__name__)


def wanted_regions(session: Session, asset_ids: list[int]) -> dict[int, WantedRegions]:
    """Each asset's faces as regions in its stored frame: the named ones to write,
    and the boxes of every face it holds."""
    wanted: dict[int, tuple[list[Region], list[Box]]] = {}
    shapes: dict[int, tuple[int, int, int]] = {}
    for chunk in chunks(sorted(set(asset_ids))):
        for shape in session.execute(
            select(assets.c.id, assets.c.width, assets.c.height, assets.c.orientation).where(
                assets.c.id.in_(chunk)
            )
        ):
            shapes[shape.id] = (shape.width, shape.height, shape.orientation)
        rows = session.execute(
            select(
                faces.c.asset_id,
                faces.c.box_left,
                faces.c.box_top,
                faces.c.box_width,
                faces.c.box_height,
                faces.c.assigned,
                faces.c.not_face,
                people.c.name,
            )
            .outerjoin(people, people.c.id == faces.c.person_id)
            .where(faces.c.asset_id.in_(chunk))
            .order_by(faces.c.asset_id, faces.c.ordinal)
        )
        for row in rows:
            orientation = shapes[row.asset_id][2]
            box = to_stored((row.box_left, row.box_top, row.box_width, row.box_height), orientation)
            named, held = wanted.setdefault(row.asset_id, ([], []))
            held.append(box)
            if row.name and row.assigned == USER and not row.not_face:
                named.append(Region(row.name, box))
    return {
        asset_id: WantedRegions(
            tuple(wanted.get(asset_id, ([], []))[0]),
            tuple(wanted.get(asset_id, ([], []))[1]),
            stored_size(*shape),
        )
        for asset_id, shape in shapes.items()
    }


def regions_agree(session: Session, asset_id: int, found: Regions) -> bool:
    """Whether the sidecar's regions are what a write would make of them."""
    wanted = wanted_regions(session, [asset_id]).get(asset_id)
    return wanted is None or not wanted.assignments(found)


def take_regions(
    factory: sessionmaker[Session],
    asset_id: int,
    found: Regions,
    *,
    last: list[dict[str, Any]] | None,
    edited: datetime,
    ours: datetime | None,
) -> int:
    """The sidecar's named faces into the catalogue by the module's rule (``last``:
    as last written or read; ``ours``: the asset's last people change here); how
    many faces were placed."""
    now = found.record()
    if now == (last or []):
        return 0  # not changed by another program (or says nothing of people)
    if ours is not None and edited <= ours:
        return 0  # ours is newer: the writer puts it in the sidecar
    return place_regions(factory, asset_id, found.named_faces())


@transactional
def place_regions(
    factory: sessionmaker[Session],
    asset_id: int,
    regions: list[Region],
    *,
    unplaced_only: bool = False,
) -> int:
    """Each named region's face (by overlap) goes to the person of that name, as the
    user's decision; ``unplaced_only``: only faces no one placed yet. How many faces
    changed hands."""
    if not regions:
        return 0
    with write_session(factory) as session:
        orientation = session.scalar(select(assets.c.orientation).where(assets.c.id == asset_id))
        rows = session.execute(
            select(
                faces.c.id,
                faces.c.box_left,
                faces.c.box_top,
                faces.c.box_width,
                faces.c.box_height,
                faces.c.assigned,
            )
            .where(faces.c.asset_id == asset_id)
            .order_by(faces.c.ordinal)
        ).all()
        boxes = [
            to_stored((r.box_left, r.box_top, r.box_width, r.box_height), orientation or 1)
            for r in rows
        ]
        pairs = match([region.box for region in regions], boxes)
        chosen = {
            rows[face].id: str(regions[region].name)
            for region, face in pairs.items()
            if not (unplaced_only and rows[face].assigned is not None)
        }
        return place_named(session, chosen) if chosen else 0


def name_new_faces(factory: sessionmaker[Session]) -> int:
    """The faces no one placed, in photos whose sidecar named regions when it was
    last read: matched to those regions (the faces job, before its grouping). How
    many faces were placed."""
    with read_session(factory) as session:
        waiting = (
            select(faces.c.asset_id)
            .where(faces.c.assigned.is_(None), faces.c.not_face.is_(False))
            .distinct()
            .subquery()
        )
        rows = session.execute(
            select(xmp_sidecars.c.asset_id, xmp_sidecars.c.fields).join(
                waiting, waiting.c.asset_id == xmp_sidecars.c.asset_id
            )
        ).all()
    placed = 0
    for row in rows:
        remembered = (row.fields or {}).get(FIELD) or []
        regions = [region for region in map(_from_record, remembered) if region is not None]
        if regions:
            placed += place_regions(factory, row.asset_id, regions, unplaced_only=True)
    return placed


def _from_record(record: Any) -> Region | None:
    try:
        x, y, w, h = (float(record[key]) for key in ("x", "y", "w", "h"))
        name = str(record["name"])
    except (KeyError, TypeError, ValueError):
        return None
    return Region(name, (x - w / 2, y - h / 2, w, h))
