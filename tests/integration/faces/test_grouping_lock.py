"""Two groupings of one library at once, on both databases: the second waits for the
first's lock, then sees only what the first left; no face is placed twice and no
identity becomes two people. Synthetic embeddings: no dlib needed."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
from sqlalchemy import func, insert, select, text

from photo_pipeline.db import read_session
from photo_pipeline.db.dialect import engine_of, is_postgresql
from photo_pipeline.db.schema import faces, people
from photo_pipeline.pipeline.faces.grouping import Grouped, group_faces
from photo_pipeline.pipeline.faces.grouping_lock import GROUPING_LOCK, grouping_lock, lock_file
from tests.support.catalogue_rows import NOW, add_assets

IDENTITIES = 3
FACES_EACH = 4


def _add_faces(factory) -> np.ndarray:
    """Three planted people of four faces each (within ~0.25 of each other, ~1.3
    apart), one asset per face; the owner of each face id in order."""
    rng = np.random.default_rng(3)
    centres = rng.normal(0, 0.08, (IDENTITIES, 128)).astype(np.float32)
    owner = np.repeat(np.arange(IDENTITIES), FACES_EACH)
    vectors = centres[owner] + rng.normal(0, 0.015, (len(owner), 128)).astype(np.float32)
    ids = add_assets(factory, [n for n in range(len(owner))])
    with factory.begin() as session:
        session.execute(
            insert(faces),
            [
                {
                    "asset_id": asset_id, "ordinal": 0, "box_left": 0.4, "box_top": 0.3,
                    "box_width": 0.2, "box_height": 0.2, "landmarks": [], "score": 1.0,
                    "embedding": vector.tobytes(), "sharpness": 0.5, "created_at": NOW,
                }
                for asset_id, vector in zip(ids, vectors, strict=True)
            ],
        )  # fmt: skip
    return owner


def _waits_for_lock(factory) -> bool:
    """Someone is blocked on the grouping lock right now."""
    if is_postgresql(engine_of(factory)):
        with read_session(factory) as session:
            return bool(
                session.scalar(
                    text(
                        "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
                        "AND NOT granted AND objid = :key"
                    ),
                    {"key": GROUPING_LOCK},
                )
            )
    path = lock_file(factory)
    assert path is not None
    inode = os.stat(path).st_ino
    # /proc/locks: a blocked request's line has "->" before its type.
    return any(
        "->" in line and "FLOCK" in line and line.split()[-3].endswith(f":{inode}")
        for line in Path("/proc/locks").read_text().splitlines()
    )


def test_a_second_grouping_waits_for_the_first_and_places_nothing_twice(session_factory):
    results: list[Grouped] = []
    errors: list[BaseException] = []

    def second() -> None:
        try:
            results.append(group_faces(session_factory))
        except BaseException as exc:  # reported by the test below
            errors.append(exc)

    with grouping_lock(session_factory):
        runner = threading.Thread(target=second)
        runner.start()
        deadline = time.monotonic() + 60
        while not _waits_for_lock(session_factory):
            assert runner.is_alive() and not errors, "the second grouping did not wait"
            assert time.monotonic() < deadline, "the second grouping never asked for the lock"
            time.sleep(0.01)  # polling an observed state, not ordering by time
        # Faces arrive while the first run holds the lock: the second, waiting, sees them.
        owner = _add_faces(session_factory)
        assert runner.is_alive()
    runner.join()
    assert not errors
    (done,) = results
    assert done.examined == len(owner) and done.new_people == IDENTITIES

    # Two at once from here on: the late one finds nothing left to place.
    threads = [threading.Thread(target=second) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors and all(r.placed == 0 and r.new_people == 0 for r in results[1:])
    with read_session(session_factory) as session:
        rows = session.execute(select(faces.c.id, faces.c.person_id).order_by(faces.c.id)).all()
        made = session.scalar(select(func.count()).select_from(people))
    assert made == IDENTITIES
    person_of = [row.person_id for row in rows]
    assert None not in person_of
    for identity in range(IDENTITIES):
        assert len({p for p, o in zip(person_of, owner, strict=True) if o == identity}) == 1
