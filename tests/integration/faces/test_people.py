"""The faces job on an imported library of the real test photos, on both databases:
faces found and grouped into people, named, merged, moved; names and decisions kept
through a regrouping and a re-import; search and listings by person."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import func, select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import face_scans, faces, files, people
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.faces import people as decide
from photo_pipeline.pipeline.faces.grouping import group_faces, reset_unnamed
from photo_pipeline.pipeline.faces.job import enqueue_faces
from photo_pipeline.pipeline.library.browse import AssetFilter, Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.search import parse
from tests.support.face_photos import OBAMA, people_folder
from tests.support.import_jobs import import_and_run, run_worker_retrying_at_once, settings_for

PREVIEW = 1280  # t1.jpg's own width: its six faces are 90-130 px


def _import(session_factory, db_url, tmp_path: Path, face_images: Path):
    folder = people_folder(face_images, tmp_path / "photos")
    settings = settings_for(tmp_path / "home", db_url, preview_size=PREVIEW, faces="on")
    jobs = import_and_run(session_factory, folder, settings)
    assert {job["job_type"]: job["state"] for job in jobs}["faces"] == JobState.SUCCEEDED
    return folder, settings


def _faces_by_file(session_factory) -> dict[str, list[dict]]:
    with read_session(session_factory) as session:
        rows = session.execute(
            select(files.c.path, faces).join(files, files.c.asset_id == faces.c.asset_id)
        ).all()
    found: dict[str, list[dict]] = {}
    for row in rows:
        found.setdefault(row.path, []).append(row._asdict())
    return found


def _scans_by_file(session_factory) -> dict[str, dict]:
    with read_session(session_factory) as session:
        rows = session.execute(
            select(files.c.path, face_scans).join(files, files.c.asset_id == face_scans.c.asset_id)
        ).all()
    return {row.path: row._asdict() for row in rows}


def _identity(path: str, face: dict, t1_faces: list[dict]) -> str:
    """Who a face is: the person of a one-person photo, or which of t1's six (the
    mirror image's faces matched to t1's by their mirrored centres)."""
    if not path.startswith("t1"):
        return "obama" if path in OBAMA else path
    cx = face["box_left"] + face["box_width"] / 2
    cy = face["box_top"] + face["box_height"] / 2
    if path == "t1_mirror.jpg":
        cx = 1 - cx
    nearest = min(
        t1_faces,
        key=lambda t: (
            (t["box_left"] + t["box_width"] / 2 - cx) ** 2
            + (t["box_top"] + t["box_height"] / 2 - cy) ** 2
        ),
    )
    return f"t1#{nearest['ordinal']}"


def test_faces_are_found_skipped_and_grouped_one_person_each(
    session_factory, db_url, tmp_path, face_images
):
    _import(session_factory, db_url, tmp_path, face_images)
    by_file = _faces_by_file(session_factory)
    scans = _scans_by_file(session_factory)
    assert len(scans) == 12  # every photo looked at, faces or not
    assert len(by_file["t1.jpg"]) == 6 and len(by_file["t1_mirror.jpg"]) == 6
    assert "camera.png" not in by_file and scans["camera.png"]["faces"] == 0
    assert "t1_blurred.jpg" not in by_file and scans["t1_blurred.jpg"]["blurred"] >= 4
    assert "t1_small.jpg" not in by_file and scans["t1_small.jpg"]["too_small"] >= 4
    assert len(by_file["astronaut.png"]) == 1

    who: dict[int, set[str]] = {}
    for path, found in by_file.items():
        for face in found:
            if face["person_id"] is not None:
                who.setdefault(face["person_id"], set()).add(
                    _identity(path, face, by_file["t1.jpg"])
                )
    # The five photos of one person are one person; no person holds two people.
    obama = {by_file[name][0]["person_id"] for name in OBAMA}
    assert len(obama) == 1 and None not in obama
    assert all(len(identities) == 1 for identities in who.values()), who
    # Each of t1's six and its mirror image make a person of two faces.
    assert sum(1 for ids in who.values() if next(iter(ids)).startswith("t1#")) == 6


def test_a_name_stays_through_a_regrouping_and_a_reimport_and_finds_the_photos(
    session_factory, db_url, tmp_path, face_images
):
    folder, settings = _import(session_factory, db_url, tmp_path, face_images)
    by_file = _faces_by_file(session_factory)
    obama = by_file["obama.jpg"][0]["person_id"]
    decide.name_person(session_factory, obama, "Barack Obama")

    assert reset_unnamed(session_factory) > 0  # t1's people back in the pool
    group_faces(session_factory)
    import_and_run(session_factory, folder, settings)  # again: nothing new to look at
    service = JobService(session_factory)
    enqueue_faces(service, settings.home)
    run_worker_retrying_at_once(session_factory)

    assert decide.find_person(session_factory, "barack obama") == obama
    assert len(decide.person_faces(session_factory, obama)) == 5
    with read_session(session_factory) as session:
        assert session.scalar(select(func.count()).select_from(faces)) == 1 + 5 + 1 + 12
    browser = Browser(session_factory)
    listed, _ = browser.asset_page(AssetFilter(person=obama), limit=50)
    assert sorted(row["name"] for row in listed) == sorted(OBAMA)
    searched, _ = browser.asset_page(parse("barack"), limit=50)
    assert sorted(row["name"] for row in searched) == sorted(OBAMA)
    assert [r["name"] for r in Catalog(session_factory).assets(person=obama)] != []


def test_decisions_are_never_undone_by_the_grouping(session_factory, db_url, tmp_path, face_images):
    _import(session_factory, db_url, tmp_path, face_images)
    by_file = _faces_by_file(session_factory)
    obama = by_file["obama.jpg"][0]["person_id"]
    partial = by_file["obama_partial_face.jpg"][0]["id"]
    astronaut = by_file["astronaut.png"][0]["id"]
    t1_person = by_file["t1.jpg"][0]["person_id"]
    t1_face = by_file["t1.jpg"][0]["id"]

    decide.release_faces(session_factory, [partial])  # not obama's, the user says
    decide.release_faces(session_factory, [astronaut], not_face=True)
    split = decide.move_faces(session_factory, [t1_face], None)["id"]  # a person alone
    reset_unnamed(session_factory)
    group_faces(session_factory)

    after = {
        face["id"]: face for found in _faces_by_file(session_factory).values() for face in found
    }
    assert after[partial]["person_id"] is None and after[partial]["assigned"] == "user"
    assert after[astronaut]["not_face"] and after[astronaut]["person_id"] is None
    assert after[t1_face]["person_id"] == split
    # Obama's unnamed person was grouped again: the four faces left, not the fifth.
    obama = _faces_by_file(session_factory)["obama.jpg"][0]["person_id"]
    assert len(decide.person_faces(session_factory, obama)) == 4

    # A merge: the mirror face joins the split person; the emptied person is gone.
    named = decide.name_person(session_factory, split, "Guest")
    others = [
        f["person_id"]
        for f in after.values()
        if f["person_id"] not in (None, obama, split) and f["person_id"] != t1_person
    ]
    merged = decide.merge_people(session_factory, "guest", [others[0]])
    assert merged["id"] == split and merged["name"] == named["name"]
    with read_session(session_factory) as session:
        assert session.scalar(select(people.c.id).where(people.c.id == others[0])) is None
