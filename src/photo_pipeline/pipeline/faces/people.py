"""What the user decides about faces and people: names, merges, faces moved, taken out
or called no face. Every decision marks the faces it touches ``assigned = "user"``, so
the grouping (``pipeline.faces.grouping``) never undoes it; naming a person confirms
the faces it holds the same way. A decision that changes a named person's faces puts
their photos in the curation outbox (field ``regions``): the XMP writer refreshes
their MWG regions (``pipeline.xmp.regions``)."""

from __future__ import annotations

import io
import logging
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, face_scans, faces, people, renditions
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.pipeline.curation import names
from photo_pipeline.pipeline.curation.changes import touch
from photo_pipeline.pipeline.faces.assignments import USER, drop_empty_people

REGIONS = "regions"  # the outbox field of a photo whose people changed
log = logging.getLogger(__name__)

MAX_NAME_LENGTH = 200
_MAX_ID = 2**63 - 1


class PersonNotFound(PhotoPipelineError):
    code = "person_not_found"
    status = 404


class PersonExists(PhotoPipelineError):
    """Another person has that name: merge them instead."""

    code = "person_exists"
    status = 409


class InvalidPersonName(PhotoPipelineError):
    code = "invalid_person_name"
    status = 422


class FaceNotFound(PhotoPipelineError):
    code = "face_not_found"
    status = 404


def normalise_name(text: str) -> tuple[str, str]:
    """A person's name as stored (space runs made one, NFC) and its casefolded key."""
    return names.normalise_name(
        text, InvalidPersonName, "a person's", "a person's name cannot be empty", MAX_NAME_LENGTH
    )


def _resolve(session: Session, ref: int | str) -> int:
    """The person ``ref`` names: an id, or a name (any case); digits no one is named are
    an id."""
    if isinstance(ref, str):
        try:
            _, key = normalise_name(ref)
        except InvalidPersonName:
            key = None
        if key is not None:
            found: int | None = session.scalar(select(people.c.id).where(people.c.key == key))
            if found is not None:
                return found
        if not (ref.isascii() and ref.isdigit()):
            raise PersonNotFound(detail=f"no person {ref!r}")
        ref = int(ref)
    if 0 < ref <= _MAX_ID and session.scalar(
        select(people.c.id).where(people.c.id == ref).with_for_update()
    ):
        return ref
    raise PersonNotFound(detail=f"no person {ref}")


def find_person(factory: sessionmaker[Session], ref: int | str) -> int:
    with read_session(factory) as session:
        return _resolve(session, ref)


def with_person(person_id: int) -> ColumnElement[bool]:
    """The listing condition: a face of the person is in the asset."""
    return exists().where(
        faces.c.asset_id == assets.c.id,
        faces.c.person_id == person_id,
        faces.c.not_face.is_(False),
    )


def with_people(person_ids: list[int]) -> ColumnElement[bool]:
    """The listing condition: a face of one of the people is in the asset."""
    return exists().where(
        faces.c.asset_id == assets.c.id,
        faces.c.person_id.in_(person_ids),
        faces.c.not_face.is_(False),
    )


def list_people(factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    """Every person: named ones first (by name), then the unnamed by size; each with its
    face count, asset count and the face to show (its sharpest)."""
    counts = (
        select(
            faces.c.person_id,
            func.count().label("faces"),
            func.count(func.distinct(faces.c.asset_id)).label("assets"),
        )
        .where(faces.c.person_id.is_not(None), faces.c.not_face.is_(False))
        .group_by(faces.c.person_id)
        .subquery()
    )
    ranked = (
        select(
            faces.c.person_id,
            faces.c.id,
            func.row_number()
            .over(
                partition_by=faces.c.person_id,
                order_by=((faces.c.box_width * faces.c.sharpness).desc(), faces.c.id),
            )
            .label("rank"),
        )
        .where(faces.c.person_id.is_not(None), faces.c.not_face.is_(False))
        .subquery()
    )
    with read_session(factory) as session:
        rows = session.execute(
            select(
                people.c.id,
                people.c.name,
                func.coalesce(counts.c.faces, 0).label("faces"),
                func.coalesce(counts.c.assets, 0).label("assets"),
                ranked.c.id.label("cover_face_id"),
            )
            .outerjoin(counts, counts.c.person_id == people.c.id)
            .outerjoin(ranked, (ranked.c.person_id == people.c.id) & (ranked.c.rank == 1))
        ).all()
    found = [row._asdict() for row in rows]
    found.sort(
        key=lambda p: (p["name"] is None, names.name_key(p["name"] or ""), -p["faces"], p["id"])
    )
    return found


def person_faces(factory: sessionmaker[Session], ref: int | str) -> list[dict[str, Any]]:
    """The faces of a person, by asset."""
    with read_session(factory) as session:
        person_id = _resolve(session, ref)
        return [
            row._asdict()
            for row in session.execute(
                select(*_face_columns())
                .where(faces.c.person_id == person_id, faces.c.not_face.is_(False))
                .order_by(faces.c.asset_id, faces.c.ordinal)
            )
        ]


def asset_faces(factory: sessionmaker[Session], asset_id: int) -> dict[str, Any]:
    """An asset's faces with their people, and what its scan skipped (None: not
    scanned yet)."""
    with read_session(factory) as session:
        rows = session.execute(
            select(*_face_columns(), people.c.name.label("person"))
            .outerjoin(people, people.c.id == faces.c.person_id)
            .where(faces.c.asset_id == asset_id)
            .order_by(faces.c.ordinal)
        ).all()
        scan = session.execute(
            select(face_scans.c.too_small, face_scans.c.blurred).where(
                face_scans.c.asset_id == asset_id
            )
        ).first()
    return {
        "asset_id": asset_id,
        "scanned": scan is not None,
        "too_small": scan.too_small if scan else 0,
        "blurred": scan.blurred if scan else 0,
        "faces": [row._asdict() for row in rows],
    }


def _face_columns() -> list[Any]:
    return [
        faces.c.id,
        faces.c.asset_id,
        faces.c.person_id,
        faces.c.box_left,
        faces.c.box_top,
        faces.c.box_width,
        faces.c.box_height,
        faces.c.assigned,
        faces.c.not_face,
    ]


@transactional
def name_person(factory: sessionmaker[Session], ref: int | str, name: str) -> dict[str, Any]:
    """Name (or rename) a person; its faces are confirmed as theirs."""
    # Here, not at the top: the grouping loads NumPy, which listing people does not need.
    spelled, key = normalise_name(name)
    with write_session(factory) as session:
        person_id = _resolve(session, ref)
        other = session.scalar(
            select(people.c.id).where(people.c.key == key, people.c.id != person_id)
        )
        if other is not None:
            raise PersonExists(
                detail=f"person {other} is already named {spelled!r}: merge them "
                f"(people merge {other} {person_id})"
            )
        now = utc_now()
        session.execute(
            update(people)
            .where(people.c.id == person_id)
            .values(name=spelled, key=key, updated_at=now)
        )
        session.execute(update(faces).where(faces.c.person_id == person_id).values(assigned=USER))
        _regions_changed(session, _assets_of(session, faces.c.person_id == person_id), now)
    return {"id": person_id, "name": spelled}


@transactional
def merge_people(
    factory: sessionmaker[Session], into: int | str, others: list[int | str]
) -> dict[str, Any]:
    """Every face of ``others`` joins ``into``, and they are gone; ``into`` keeps its
    name, or takes the first name among them when it has none."""
    with write_session(factory) as session:
        target = _resolve(session, into)
        sources = [source for source in dict.fromkeys(_resolve(session, o) for o in others)]
        sources = [source for source in sources if source != target]
        moved = changed_rows(
            session,
            update(faces)
            .where(faces.c.person_id.in_(sources))
            .values(person_id=target, assigned=USER),
        )
        named = session.execute(
            select(people.c.id, people.c.name, people.c.key).where(
                people.c.id.in_([target, *sources])
            )
        ).all()
        by_id = {row.id: row for row in named}
        session.execute(delete(people).where(people.c.id.in_(sources)))
        name = by_id[target].name
        if name is None:
            name_row = next((by_id[s] for s in sources if by_id[s].name is not None), None)
            if name_row is not None:
                name = name_row.name
                session.execute(
                    update(people)
                    .where(people.c.id == target)
                    .values(name=name_row.name, key=name_row.key, updated_at=utc_now())
                )
        session.execute(update(faces).where(faces.c.person_id == target).values(assigned=USER))
        if name is not None:  # its faces are confirmed (and some renamed): written again
            _regions_changed(session, _assets_of(session, faces.c.person_id == target), utc_now())
    return {"id": target, "name": name, "faces_moved": int(moved)}


def _check_faces(session: Session, face_ids: list[int]) -> None:
    known = set(session.scalars(select(faces.c.id).where(faces.c.id.in_(face_ids))))
    unknown = [face_id for face_id in face_ids if face_id not in known]
    if unknown:
        raise FaceNotFound(detail=f"no face {', '.join(map(str, unknown))}")


@transactional
def move_faces(
    factory: sessionmaker[Session], face_ids: list[int], to: int | str | None
) -> dict[str, Any]:
    """The faces go to person ``to`` (None: to a new, unnamed person — a split)."""
    now = utc_now()
    with write_session(factory) as session:
        _check_faces(session, face_ids)
        if to is None:
            target = session.execute(
                people.insert().values(created_at=now, updated_at=now).returning(people.c.id)
            ).scalar_one()
        else:
            target = _resolve(session, to)
        named_before = _assets_of(session, faces.c.id.in_(face_ids), named=True)
        session.execute(
            update(faces)
            .where(faces.c.id.in_(face_ids))
            .values(person_id=target, assigned=USER, not_face=False)
        )
        named_after = _assets_of(session, faces.c.id.in_(face_ids), named=True)
        _regions_changed(session, sorted({*named_before, *named_after}), now)
        drop_empty_people(session)
    return {"id": target, "faces_moved": len(face_ids)}


@transactional
def release_faces(
    factory: sessionmaker[Session], face_ids: list[int], *, not_face: bool = False
) -> int:
    """The faces belong to no one (``not_face``: are no face at all); for good."""
    with write_session(factory) as session:
        _check_faces(session, face_ids)
        named_before = _assets_of(session, faces.c.id.in_(face_ids), named=True)
        session.execute(
            update(faces)
            .where(faces.c.id.in_(face_ids))
            .values(person_id=None, assigned=USER, not_face=not_face)
        )
        _regions_changed(session, named_before, utc_now())
        drop_empty_people(session)
    return len(face_ids)


def place_named(session: Session, chosen: dict[int, str]) -> int:
    """Each face of ``chosen`` (face id -> a person's name) goes to the person of that
    name, made when there is none, as the user's decision (a name read from another
    program's XMP regions); a name the catalogue refuses is skipped. How many faces
    changed. In the caller's transaction; the photos are not queued for writing
    (what is read back is not written back)."""
    now = utc_now()
    by_key: dict[str, int] = {}
    changed = 0
    for face_id, name in chosen.items():
        try:
            spelled, key = normalise_name(name)
        except InvalidPersonName as exc:
            log.warning("face %s: name %r from XMP not taken (%s)", face_id, name, exc.detail)
            continue
        person = by_key.get(key)
        if person is None:
            person = session.scalar(select(people.c.id).where(people.c.key == key))
        if person is None:
            person = session.execute(
                people.insert()
                .values(name=spelled, key=key, created_at=now, updated_at=now)
                .returning(people.c.id)
            ).scalar_one()
        by_key[key] = person
        changed += changed_rows(
            session,
            update(faces)
            .where(
                faces.c.id == face_id,
                (faces.c.person_id.is_(None))
                | (faces.c.person_id != person)
                | (faces.c.assigned.is_(None))
                | (faces.c.assigned != USER)
                | faces.c.not_face.is_(True),
            )
            .values(person_id=person, assigned=USER, not_face=False),
        )
    drop_empty_people(session)
    return changed


def _assets_of(session: Session, which: ColumnElement[bool], *, named: bool = False) -> list[int]:
    """The photos of the faces ``which`` selects (``named``: of those in a named
    person)."""
    query = select(faces.c.asset_id).where(which).distinct()
    if named:
        query = query.join(people, people.c.id == faces.c.person_id).where(
            people.c.name.is_not(None)
        )
    return list(session.scalars(query))


def _regions_changed(session: Session, asset_ids: list[int], now: datetime) -> None:
    """The photos' people changed: into the outbox, for their sidecars' regions."""
    touch(session, asset_ids, now, REGIONS)


def face_crop(factory: sessionmaker[Session], home: Path, face_id: int, size: int = 160) -> bytes:
    """A square JPEG of the face (with a margin), cut from the asset's preview."""
    from PIL import Image

    with read_session(factory) as session:
        row = session.execute(
            select(
                faces.c.box_left,
                faces.c.box_top,
                faces.c.box_width,
                faces.c.box_height,
                renditions.c.path,
            )
            .join(
                renditions,
                (renditions.c.asset_id == faces.c.asset_id) & (renditions.c.kind == "preview"),
            )
            .where(faces.c.id == face_id)
        ).first()
    if row is None:
        raise FaceNotFound(detail=f"no face {face_id}")
    with Image.open(home / row.path) as image:
        width, height = image.size
        side = max(row.box_width * width, row.box_height * height) * 1.4
        cx = (row.box_left + row.box_width / 2) * width
        cy = (row.box_top + row.box_height / 2) * height
        box = (
            int(max(cx - side / 2, 0)),
            int(max(cy - side / 2, 0)),
            int(min(cx + side / 2, width)),
            int(min(cy + side / 2, height)),
        )
        crop = image.convert("RGB").crop(box)
    crop.thumbnail((size, size))
    out = io.BytesIO()
    crop.save(out, "JPEG", quality=85)
    return out.getvalue()
