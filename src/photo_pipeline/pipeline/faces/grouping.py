"""Faces grouped into people, incrementally: each face no person holds yet joins the
person whose nearest exemplar is within :data:`JOIN_DISTANCE`; the faces still waiting
are clustered (dlib's Chinese whispers at the same distance), a chunk at a time with a
pool of the newest :data:`POOL` left from the chunks before, and each cluster of
:data:`MIN_PEOPLE_FACES` or more becomes a new, unnamed person. The rest wait.

What it costs is bounded: a face is compared with at most :data:`EXEMPLARS` faces of
each person (its user-placed ones first), never with every face, through an index
(:mod:`.exemplar_index`: a graph search once there are thousands of people, so a face
costs about the logarithm of the exemplars), and the clustering sees at most
:data:`POOL` faces — no pass over all pairs of a library's faces.

Only faces that no one placed are touched (``assigned`` NULL): a face the user moved,
took out of a person or called no face, a person's name, a merge, are never undone;
a face the grouping placed stays where it is. :func:`reset_unnamed` (``faces --regroup``)
puts back in the pool only the faces the grouping placed in people nobody named.

JOIN_DISTANCE: on the test images (tests/integration/faces) the largest distance
between two faces of one person was 0.44 and the smallest between two people 0.63.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import bindparam, delete, func, insert, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.engine import changed_rows
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import faces, people
from photo_pipeline.jobs.service import utc_now
from photo_pipeline.media.faces import EMBEDDING_SIZE
from photo_pipeline.pipeline.faces.assignments import AUTO, USER, drop_empty_people
from photo_pipeline.pipeline.faces.exemplar_index import ExemplarIndex
from photo_pipeline.pipeline.faces.grouping_lock import grouping_lock

JOIN_DISTANCE = 0.5
EXEMPLARS = 8
POOL = 4000
MIN_PEOPLE_FACES = 2
_CHUNK = 2000
_EDGE_BLOCK = 512

Matrix = np.ndarray[Any, np.dtype[np.float32]]


@dataclass(frozen=True)
class Grouped:
    placed: int  # faces that joined a person
    new_people: int
    waiting: int  # faces no person holds after the run
    examined: int  # faces looked at


def as_vector(blob: bytes) -> Matrix:
    return np.frombuffer(blob, dtype=np.float32, count=EMBEDDING_SIZE)


def cluster(vectors: Matrix, distance: float = JOIN_DISTANCE) -> list[int]:
    """A label per row: Chinese whispers over the graph of rows within ``distance``.

    The same graph as dlib's ``chinese_whispers_clustering`` (every pair nearer than
    ``distance``, each row with itself), but its edges found with blocked matrix
    products: dlib's own loop over the pairs cost seconds for a full pool of 6,000."""
    if len(vectors) < 2:
        return [0] * len(vectors)
    import dlib

    limit = distance * distance
    norms = (vectors * vectors).sum(axis=1)
    edges: list[tuple[int, int]] = []
    for start in range(0, len(vectors), _EDGE_BLOCK):
        block = vectors[start : start + _EDGE_BLOCK]
        squared = norms[start : start + len(block), None] - 2.0 * block @ vectors[start:].T
        squared += norms[None, start:]
        rows, columns = np.nonzero(squared < limit)
        upper = columns >= rows  # each pair once, and each row with itself
        edges.extend(
            zip((rows[upper] + start).tolist(), (columns[upper] + start).tolist(), strict=True)
        )
    edges.extend((row, row) for row in range(len(vectors)))  # a row nothing is near
    labels: list[int] = dlib.chinese_whispers(sorted(set(edges)))
    return labels


def _exemplars(session: Session) -> tuple[Matrix, list[int]]:
    """Up to EXEMPLARS faces per person (user-placed first, then the oldest)."""
    ranked = (
        select(
            faces.c.person_id,
            faces.c.embedding,
            func.row_number()
            .over(
                partition_by=faces.c.person_id,
                order_by=((faces.c.assigned == USER).desc(), faces.c.id),
            )
            .label("rank"),
        )
        .where(faces.c.person_id.is_not(None), faces.c.not_face.is_(False))
        .subquery()
    )
    rows = session.execute(
        select(ranked.c.person_id, ranked.c.embedding).where(ranked.c.rank <= EXEMPLARS)
    ).all()
    if not rows:
        return np.zeros((0, EMBEDDING_SIZE), dtype=np.float32), []
    return np.stack([as_vector(row.embedding) for row in rows]), [row.person_id for row in rows]


def _waiting(session: Session, after: int, limit: int) -> list[Any]:
    return list(
        session.execute(
            select(faces.c.id, faces.c.embedding)
            .where(
                faces.c.person_id.is_(None),
                faces.c.assigned.is_(None),
                faces.c.not_face.is_(False),
                faces.c.id > after,
            )
            .order_by(faces.c.id)
            .limit(limit)
        ).all()
    )


def group_faces(factory: sessionmaker[Session]) -> Grouped:
    """Place the faces no one placed yet, holding the grouping lock (a run elsewhere
    finishes first; this one then sees what it left waiting)."""
    with grouping_lock(factory):
        return _group_faces(factory)


def _group_faces(factory: sessionmaker[Session]) -> Grouped:
    """Place the faces no one placed yet; make people of the look-alikes left. The
    waiting faces are taken a chunk at a time: each chunk is compared with the people's
    exemplars, then what it left is clustered with the pool carried from the chunks
    before (at most POOL faces), so that the people a chunk makes are there for the
    next: the cost is linear in the faces, times the pool's size and the exemplar search."""
    with read_session(factory) as session:
        exemplars = ExemplarIndex(*_exemplars(session))
    placed = examined = new_people = 0
    pool: list[tuple[int, Matrix]] = []
    after = 0
    while True:
        with read_session(factory) as session:
            rows = _waiting(session, after, _CHUNK)
        if not rows:
            break
        after = rows[-1].id
        examined += len(rows)
        vectors = np.stack([as_vector(row.embedding) for row in rows])
        joins: dict[int, list[int]] = {}
        if len(exemplars):
            best, distance = exemplars.nearest(vectors)
            for row, person, far in zip(rows, best.tolist(), distance, strict=True):
                if far <= JOIN_DISTANCE:
                    joins.setdefault(person, []).append(row.id)
        joined = {face_id for ids in joins.values() for face_id in ids}
        placed += _place(factory, joins)
        pool.extend(
            (row.id, vector)
            for row, vector in zip(rows, vectors, strict=True)
            if row.id not in joined
        )
        made = _people_of(factory, pool)
        if made:
            taken = {face_id for ids in made.values() for face_id in ids}
            vector_of = dict(pool)
            new_people += len(made)
            placed += len(taken)
            fresh = [
                (person, vector_of[f]) for person, ids in made.items() for f in ids[:EXEMPLARS]
            ]
            exemplars.add(np.stack([v for _p, v in fresh]), [person for person, _v in fresh])
            pool = [(face_id, vector) for face_id, vector in pool if face_id not in taken]
        pool = pool[-POOL:]  # the newest wait in the pool; older ones wait for a person
    with read_session(factory) as session:
        waiting = session.scalar(
            select(func.count())
            .select_from(faces)
            .where(faces.c.person_id.is_(None), faces.c.not_face.is_(False))
        )
    return Grouped(placed, new_people, int(waiting or 0), examined)


def _people_of(
    factory: sessionmaker[Session], pool: list[tuple[int, Matrix]]
) -> dict[int, list[int]]:
    """The new people the pool's clusters make: person id -> their face ids."""
    if len(pool) < MIN_PEOPLE_FACES:
        return {}
    labels = cluster(np.stack([vector for _id, vector in pool]))
    members: dict[int, list[int]] = {}
    for (face_id, _vector), label in zip(pool, labels, strict=True):
        members.setdefault(label, []).append(face_id)
    groups = [ids for ids in members.values() if len(ids) >= MIN_PEOPLE_FACES]
    return _new_people(factory, groups) if groups else {}


# One statement for many faces (executemany): a face placed meanwhile is not matched.
_JOIN = (
    update(faces)
    .where(
        faces.c.id == bindparam("face_id"),
        faces.c.person_id.is_(None),
        faces.c.assigned.is_(None),
    )
    .values(person_id=bindparam("person"), assigned=AUTO)
)


@transactional
def _place(factory: sessionmaker[Session], joins: dict[int, list[int]]) -> int:
    """Faces join people; a face placed meanwhile (by the user, another run) stays, and
    a person merged away meanwhile takes none (they wait for the next run)."""
    if not joins:
        return 0
    with write_session(factory) as session:
        alive = set(session.scalars(select(people.c.id).where(people.c.id.in_(list(joins)))))
        rows = [
            {"face_id": face_id, "person": person}
            for person, ids in joins.items()
            if person in alive
            for face_id in ids
        ]
        return changed_rows(session, _JOIN, rows) if rows else 0


@transactional
def _new_people(factory: sessionmaker[Session], groups: list[list[int]]) -> dict[int, list[int]]:
    """A new person of each group of faces; a group some of whose faces were placed
    meanwhile, leaving fewer than MIN_PEOPLE_FACES, makes none."""
    now = utc_now()
    with write_session(factory) as session:
        made = [
            int(person)
            for person in session.scalars(
                insert(people).returning(people.c.id, sort_by_parameter_order=True),
                [{"created_at": now, "updated_at": now} for _ in groups],
            ).all()
        ]
        session.execute(
            _JOIN,
            [
                {"face_id": face_id, "person": person}
                for person, ids in zip(made, groups, strict=True)
                for face_id in ids
            ],
        )
        counted = session.execute(
            select(faces.c.person_id, func.count())
            .where(faces.c.person_id.in_(made))
            .group_by(faces.c.person_id)
        ).all()
        held = {int(row[0]): int(row[1]) for row in counted}
        short = {person for person in made if held.get(person, 0) < MIN_PEOPLE_FACES}
        if short:
            session.execute(
                update(faces)
                .where(faces.c.person_id.in_(short))
                .values(person_id=None, assigned=None)
            )
            session.execute(delete(people).where(people.c.id.in_(short)))
    return {person: ids for person, ids in zip(made, groups, strict=True) if person not in short}


def reset_unnamed(factory: sessionmaker[Session]) -> int:
    """Put back in the pool the faces the grouping placed in unnamed people, and drop
    the people left empty: what ``regroup --reset`` clusters again. Names and every
    user decision stay. Waits for a grouping running elsewhere."""
    with grouping_lock(factory):
        return _reset_unnamed(factory)


@transactional
def _reset_unnamed(factory: sessionmaker[Session]) -> int:
    with write_session(factory) as session:
        unnamed = select(people.c.id).where(people.c.name.is_(None)).scalar_subquery()
        freed = changed_rows(
            session,
            update(faces)
            .where(faces.c.assigned == AUTO, faces.c.person_id.in_(unnamed))
            .values(person_id=None, assigned=None),
        )
        drop_empty_people(session)
    return int(freed)
