"""Curation written to XMP sidecars (#34): the standard fields, other programs' fields
kept, an undo that restores exactly, what another program changed read back (newer
wins, per field), a photo's own rating and keywords, read-only folders."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest
from sqlalchemy import select

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import read_session
from photo_pipeline.db.schema import curation_pending, xmp_sidecars
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import curation, xmp
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.xmp.status import sidecar_status
from tests.integration.xmp.xmp_library import (
    exiftool_set,
    exiftool_tags,
    make_photos,
    rescan,
    write_xmp,
)
from tests.support.photo_jobs import run_worker, scan_folders

LIGHTROOM = """<x:xmpmeta xmlns:x="adobe:ns:meta/">
 <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#">
  <rdf:Description rdf:about=""
    xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/"
    xmlns:xmp="http://ns.adobe.com/xap/1.0/"
    crs:Exposure2012="+0.35" xmp:Label="Red" xmp:Rating="2"/>
 </rdf:RDF>
</x:xmpmeta>
"""


def asset_ids(session_factory) -> dict[str, int]:
    return {f["path"]: f["asset_id"] for f in Catalog(session_factory).files() if f["asset_id"]}


def pending(session_factory) -> set[int]:
    with read_session(session_factory) as session:
        return set(session.scalars(select(curation_pending.c.asset_id)))


@pytest.fixture
def library(session_factory, tmp_path):
    root = tmp_path / "photos"
    make_photos(root, 3)
    # Lightroom's spelling beside the first, with a field of its own and a rating
    (root / "IMG_0000.jpg.xmp").write_text(LIGHTROOM)
    scan_folders(session_factory, root)
    return root


def test_curation_is_written_in_the_standard_fields_and_others_are_kept(session_factory, library):
    ids = asset_ids(session_factory)
    first, second = ids["IMG_0000.jpg"], ids["IMG_0001.jpg"]
    # The scan took Lightroom's rating in (nothing here had rated it).
    assert curation.curation_of(session_factory, first)["rating"] == 2
    curation.set_rating(session_factory, [first, second], 4)
    curation.set_favorite(session_factory, [second], True)
    curation.set_rejected(session_factory, [first], True)
    curation.add_tag(session_factory, "Places|France|Paris", [first, second])
    album, _ = curation.create_album(session_factory, "Trip, 2024")
    curation.add_to_album(session_factory, album["id"], [second])

    job = write_xmp(session_factory)
    assert job is not None and job["state"] == JobState.SUCCEEDED
    assert not pending(session_factory)
    lightroom = exiftool_tags(library / "IMG_0000.jpg.xmp")  # its spelling kept
    assert lightroom["XMP-crs:Exposure2012"] == "+0.35"  # a field we do not own stays
    assert lightroom["XMP-xmp:Rating"] == 4
    assert lightroom["XMP-xmp:Label"] == "Rejected"
    assert lightroom["XMP-lr:HierarchicalSubject"] == ["Places|France|Paris"]
    assert lightroom["XMP-dc:Subject"] == ["Places", "France", "Paris"]
    assert not (library / "IMG_0000.xmp").exists()
    made = exiftool_tags(library / "IMG_0001.xmp")  # a new one: Lightroom's usual name
    assert made["XMP-xmp:Rating"] == 4
    assert made["XMP-xmpDM:Good"] is True
    assert made["XMP-mwg-coll:Collections"] == [
        {"CollectionName": "Trip, 2024", "CollectionURI": f"urn:photo-pipeline:album:{album['id']}"}
    ]
    assert "XMP-xmp:Label" not in made
    assert not (library / "IMG_0002.xmp").exists()  # never curated: nothing to write
    assert not [p for p in library.iterdir() if ".pp-xmp" in p.name]

    # Un-rejecting takes our label off; Lightroom's colour label would have stayed.
    curation.set_rejected(session_factory, [first], False)
    write_xmp(session_factory)
    assert "XMP-xmp:Label" not in exiftool_tags(library / "IMG_0000.jpg.xmp")


def test_undo_puts_back_exactly_what_was_there_and_the_catalogue_follows(session_factory, library):
    ids = asset_ids(session_factory)
    first, second = ids["IMG_0000.jpg"], ids["IMG_0001.jpg"]
    before = (library / "IMG_0000.jpg.xmp").read_bytes()
    curation.set_rating(session_factory, [first, second], 5)
    job = write_xmp(session_factory)
    assert {e["asset_id"]: e["state"] for e in xmp.journal(session_factory, job["id"])} == {
        first: "written",
        second: "written",
    }
    service = JobService(session_factory)
    undo = xmp.start_undo(service, job["id"]).job
    run_worker(session_factory, xmp.UNDO_JOB_TYPE)
    assert service.get(undo["id"])["state"] == JobState.SUCCEEDED
    assert service.progress(undo["id"])["by_state"] == {"succeeded": 2}
    assert (library / "IMG_0000.jpg.xmp").read_bytes() == before
    assert not (library / "IMG_0001.xmp").exists()  # there was none
    # The catalogue holds what the restored sidecar says; nothing is written again.
    assert curation.curation_of(session_factory, first)["rating"] == 2
    assert not pending(session_factory)
    assert write_xmp(session_factory) is None
    with pytest.raises(xmp.NotAnXmpWrite):
        xmp.start_undo(service, job["id"])  # nothing left to undo


def test_undo_refuses_a_sidecar_changed_since(session_factory, library):
    first = asset_ids(session_factory)["IMG_0000.jpg"]
    curation.set_rating(session_factory, [first], 5)
    job = write_xmp(session_factory)
    exiftool_set(library / "IMG_0000.jpg.xmp", "-XMP-xmp:Rating=1")
    edited = (library / "IMG_0000.jpg.xmp").read_bytes()
    service = JobService(session_factory)
    undo = xmp.start_undo(service, job["id"]).job
    run_worker(session_factory, xmp.UNDO_JOB_TYPE)
    [failed] = service.items(undo["id"], states=["failed"])
    assert failed["error_code"] == "changed_since_write"
    assert (library / "IMG_0000.jpg.xmp").read_bytes() == edited


def test_a_rating_set_by_another_program_is_read_at_the_next_scan(session_factory, library):
    second = asset_ids(session_factory)["IMG_0001.jpg"]
    curation.set_rating(session_factory, [second], 3)
    curation.add_tag(session_factory, "sunset", [second])
    write_xmp(session_factory)
    sidecar = library / "IMG_0001.xmp"
    exiftool_set(sidecar, "-XMP-xmp:Rating=1")  # Lightroom, later than our change
    rescan(session_factory, library)
    shown = curation.curation_of(session_factory, second)
    assert shown["rating"] == 1
    assert shown["tags"] == ["sunset"]  # a field it did not change stays ours
    assert not pending(session_factory)  # taken in, not written back
    with read_session(session_factory) as session:
        state = session.scalar(
            select(xmp_sidecars.c.state).where(xmp_sidecars.c.asset_id == second)
        )
    assert state == "read"


def test_a_change_in_the_catalogue_newer_than_the_sidecars_wins(session_factory, library):
    second = asset_ids(session_factory)["IMG_0001.jpg"]
    curation.set_rating(session_factory, [second], 3)
    write_xmp(session_factory)
    sidecar = library / "IMG_0001.xmp"
    exiftool_set(sidecar, "-XMP-xmp:Rating=1", "-XMP-xmpDM:Good=True")
    past = time.time() - 3600
    os.utime(sidecar, (past, past))  # edited an hour ago, before the change below
    curation.set_rating(session_factory, [second], 5)
    rescan(session_factory, library)
    shown = curation.curation_of(session_factory, second)
    assert shown["rating"] == 5  # ours is newer
    assert shown["favorite"] is True  # theirs: we never changed it
    write_xmp(session_factory)
    tags = exiftool_tags(sidecar)
    assert (tags["XMP-xmp:Rating"], tags["XMP-xmpDM:Good"]) == (5, True)


def test_a_photos_own_rating_and_keywords_are_read(session_factory, tmp_path):
    root = tmp_path / "embedded"
    [photo] = make_photos(root, 1)
    subprocess.run(
        ["exiftool", "-q", "-overwrite_original", "-XMP-xmp:Rating=3",
         "-IPTC:Keywords=beach", "-XMP-dc:Subject=beach", str(photo)],
        check=True,
    )  # fmt: skip
    original = photo.read_bytes()
    scan_folders(session_factory, root)
    [asset_id] = asset_ids(session_factory).values()
    shown = curation.curation_of(session_factory, asset_id)
    assert (shown["rating"], shown["tags"]) == (3, ["beach"])
    write_xmp(session_factory)
    assert photo.read_bytes() == original  # the original is never written
    assert exiftool_tags(root / "IMG_0000.xmp")["XMP-xmp:Rating"] == 3


def test_a_read_only_folder_keeps_curation_in_the_catalogue_and_says_so(session_factory, tmp_path):
    card = tmp_path / "card"
    make_photos(card, 1)
    scan_folders(session_factory, card)
    [asset_id] = asset_ids(session_factory).values()
    mounted = subprocess.run(["mount", "--bind", str(card), str(card)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(card)], check=True)
        curation.set_rating(session_factory, [asset_id], 4)
        job = write_xmp(session_factory)
    finally:
        subprocess.run(["umount", str(card)], check=True)
    [failed] = JobService(session_factory).items(job["id"], states=["failed"])
    assert failed["error_code"] == "source_read_only"
    assert sorted(p.name for p in card.iterdir()) == ["IMG_0000.jpg"]
    assert curation.curation_of(session_factory, asset_id)["rating"] == 4
    assert not pending(session_factory)  # not tried again and again
    with read_session(session_factory) as session:
        status = sidecar_status(session, asset_id)
    assert status is not None and status["state"] == "read_only"
    assert "catalogue only" in status["said"]


def test_the_command_line_writes_and_undoes(session_factory, library, cli):
    first = asset_ids(session_factory)["IMG_0000.jpg"]
    before = (library / "IMG_0000.jpg.xmp").read_bytes()
    code, _, err = cli("rate", "5", str(first))
    assert code == 0, err
    code, out, err = cli("xmp", "write", "--wait", "--json")
    assert code == 0, err
    job = json.loads(out)
    assert job["state"] == "succeeded"
    assert exiftool_tags(library / "IMG_0000.jpg.xmp")["XMP-xmp:Rating"] == 5
    code, out, _ = cli("xmp", "write")
    assert (code, out.strip()) == (
        0,
        "nothing to write: every sidecar holds the catalogue's curation",
    )
    code, out, err = cli("xmp", "undo", job["id"][:8], "--wait")
    assert code == 0, err
    assert "succeeded" in out
    assert (library / "IMG_0000.jpg.xmp").read_bytes() == before
    code, _, err = cli("xmp", "undo", job["id"])
    assert code != 0 and "nothing_to_undo" in err
