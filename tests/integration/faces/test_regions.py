"""People as MWG regions in XMP sidecars (#33), on the real face photos and both
databases: a named person's faces written (another program's regions kept, undone
byte for byte), and regions Lightroom or digiKam wrote read back into people. The
fixture sidecars are written by the exiftool command, as those programs write them."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import faces, files, people
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media.faces import shared_finder
from photo_pipeline.pipeline import curation, xmp
from photo_pipeline.pipeline.faces import people as decide
from tests.integration.xmp.xmp_library import rescan, write_xmp
from tests.support.import_jobs import import_and_run, settings_for
from tests.support.photo_jobs import run_worker

PREVIEW = 1280

pytestmark = pytest.mark.skipif(shutil.which("exiftool") is None, reason="no exiftool")


def _folder(face_images: Path, folder: Path) -> Path:
    folder.mkdir(parents=True)
    for name in ("obama.jpg", "biden.jpg"):
        shutil.copy(face_images / name, folder / name)
    return folder


def _import(session_factory, db_url, tmp_path: Path, folder: Path) -> None:
    settings = settings_for(tmp_path / "home", db_url, preview_size=PREVIEW, faces="on")
    jobs = import_and_run(session_factory, folder, settings)
    assert {job["job_type"]: job["state"] for job in jobs}["faces"] == JobState.SUCCEEDED


def _face_of(session_factory, name: str) -> dict:
    with read_session(session_factory) as session:
        [row] = session.execute(
            select(faces, people.c.name.label("person"))
            .join(files, files.c.asset_id == faces.c.asset_id)
            .outerjoin(people, people.c.id == faces.c.person_id)
            .where(files.c.path == name)
        ).all()
    return row._asdict()


def _regions(sidecar: Path) -> list[dict]:
    """What the exiftool command reads of the sidecar's MWG regions."""
    done = subprocess.run(
        ["exiftool", "-j", "-struct", "-n", "-RegionInfo", str(sidecar)],
        capture_output=True,
        check=True,
    )
    [found] = json.loads(done.stdout)
    return found.get("RegionInfo", {}).get("RegionList", [])


def _set_regions(sidecar: Path, *regions: str, dimensions: str = "W=1,H=1") -> None:
    """Another program writes MWG regions (exiftool's structure syntax)."""
    info = (
        "{AppliedToDimensions={"
        + dimensions
        + ",Unit=pixel},RegionList=["
        + ",".join(regions)
        + "]}"
    )
    subprocess.run(
        ["exiftool", "-q", "-overwrite_original", f"-XMP-mwg-rs:RegionInfo={info}", str(sidecar)]
        if sidecar.exists()
        else ["exiftool", "-q", "-o", str(sidecar), f"-XMP-mwg-rs:RegionInfo={info}"],
        check=True,
    )


def _region(name: str, x: float, y: float, w: float, h: float, kind: str = "Face") -> str:
    return f"{{Area={{X={x},Y={y},W={w},H={h},Unit=normalized}},Name={name},Type={kind}}}"


def _centre(face: dict) -> tuple[float, float, float, float]:
    return (
        face["box_left"] + face["box_width"] / 2,
        face["box_top"] + face["box_height"] / 2,
        face["box_width"],
        face["box_height"],
    )


def test_a_named_person_is_written_as_a_region_beside_another_programs_and_undone(
    session_factory, db_url, tmp_path, face_images
):
    folder = _folder(face_images, tmp_path / "photos")
    sidecar = folder / "obama.xmp"
    # Lightroom's sidecar, with a pet region of its own in a corner
    _set_regions(sidecar, _region("Bo", 0.1, 0.9, 0.1, 0.1, kind="Pet"))
    _import(session_factory, db_url, tmp_path, folder)
    face = _face_of(session_factory, "obama.jpg")
    assert face["person"] is None  # the pet is no face, and no face was named
    before = sidecar.read_bytes()

    decide.move_faces(session_factory, [face["id"]], None)  # a person of its own
    person = _face_of(session_factory, "obama.jpg")["person_id"]
    assert write_xmp(session_factory) is None  # unnamed: nothing to write
    decide.name_person(session_factory, person, "Barack Obama")
    job = write_xmp(session_factory)
    assert job is not None and job["state"] == JobState.SUCCEEDED

    regions = _regions(sidecar)
    by_type = {region["Type"]: region for region in regions}
    assert by_type["Pet"]["Name"] == "Bo"  # another program's region kept
    named = by_type["Face"]
    assert named["Name"] == "Barack Obama"
    area = named["Area"]
    assert area["Unit"] == "normalized"
    assert (area["X"], area["Y"], area["W"], area["H"]) == pytest.approx(_centre(face), abs=1e-5)
    assert not (folder / "biden.xmp").exists()  # no named face there

    # A rename refreshes the region; the other program's stays.
    decide.name_person(session_factory, person, "Barack H. Obama")
    renamed = write_xmp(session_factory)
    names = sorted(region["Name"] for region in _regions(sidecar))
    assert names == ["Barack H. Obama", "Bo"]

    # Undo of each write puts the bytes back.
    service = JobService(session_factory)
    for done in (renamed, job):
        xmp.start_undo(service, done["id"])
        run_worker(session_factory, xmp.UNDO_JOB_TYPE)
    assert sidecar.read_bytes() == before

    # "Not a face" takes the region out again.
    decide.name_person(session_factory, person, "Barack Obama")
    write_xmp(session_factory)
    decide.release_faces(session_factory, [face["id"]], not_face=True)
    write_xmp(session_factory)
    assert [region["Type"] for region in _regions(sidecar)] == ["Pet"]


def test_a_digikam_region_names_the_face_it_covers_and_an_unknown_one_is_kept(
    session_factory, db_url, tmp_path, face_images
):
    folder = _folder(face_images, tmp_path / "photos")
    _import(session_factory, db_url, tmp_path, folder)
    face = _face_of(session_factory, "obama.jpg")
    x, y, w, h = _centre(face)
    # digiKam's spelling and its boxes, wider than dlib's (the whole head); a face of
    # someone our detector did not find, far from it
    sidecar = folder / "obama.jpg.xmp"
    _set_regions(
        sidecar,
        _region("Barack Obama", x, y + 0.02, w * 1.4, h * 1.4),
        _region("Michelle", 0.08, 0.1, 0.1, 0.12),
        dimensions="W=4000,H=3000",
    )
    rescan(session_factory, folder)

    named = _face_of(session_factory, "obama.jpg")
    assert named["person"] == "Barack Obama" and named["assigned"] == "user"
    assert _face_of(session_factory, "biden.jpg")["person"] is None
    with read_session(session_factory) as session:
        assert session.scalar(select(people.c.id).where(people.c.key == "michelle")) is None

    # A write (a rating here) keeps the unknown face's region and digiKam's box.
    curation.set_rating(session_factory, [named["asset_id"]], 3)
    write_xmp(session_factory)
    regions = {region["Name"]: region for region in _regions(sidecar)}
    assert set(regions) == {"Barack Obama", "Michelle"}
    assert regions["Barack Obama"]["Area"]["W"] == pytest.approx(w * 1.4, abs=1e-5)

    # The catalogue's decision, newer, wins over the sidecar and is written.
    decide.name_person(session_factory, named["person_id"], "Barack")
    write_xmp(session_factory)
    assert sorted(r["Name"] for r in _regions(sidecar)) == ["Barack", "Michelle"]
    rescan(session_factory, folder)
    assert _face_of(session_factory, "obama.jpg")["person"] == "Barack"


def test_regions_in_a_sidecar_before_the_import_name_the_faces_found_later(
    session_factory, db_url, tmp_path, face_images
):
    folder = _folder(face_images, tmp_path / "photos")
    [found] = shared_finder().find_in_file(folder / "biden.jpg").faces
    left, top, w, h = found.box
    # Lightroom's box, a little larger: the scan reads it before any face is found.
    _set_regions(
        folder / "biden.xmp", _region("Joe Biden", left + w / 2, top + h / 2, w * 1.2, h * 1.3)
    )
    _import(session_factory, db_url, tmp_path, folder)
    face = _face_of(session_factory, "biden.jpg")
    assert face["person"] == "Joe Biden" and face["assigned"] == "user"
    assert _face_of(session_factory, "obama.jpg")["person"] is None
