"""``photo-pipeline sources``: the registered folders, and ``--remove`` forgetting one
(its rows and the assets no other folder holds; never a file on disk)."""

from __future__ import annotations

import json

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.cli.common import library
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.ingest.sources import list_sources, sources_outside
from tests.factories import photos
from tests.support.dedupe_library import same_bytes
from tests.support.photo_jobs import scan_folders


def test_sources_are_listed_and_one_is_forgotten_with_nothing_on_disk_touched(cli, tmp_path):
    card, backup = tmp_path / "card", tmp_path / "backup"
    for n in range(3):
        photos.jpeg(card / f"IMG_{n}.jpg", size=(24, 16), seed=n)
    same_bytes(card / "IMG_0.jpg", backup / "IMG_0.jpg", 1)  # also held by the card
    photos.jpeg(backup / "only_here.jpg", size=(24, 16), seed=9)
    sessions = library().sessions
    scan_folders(sessions, card, backup)
    on_disk = sorted(p.name for p in backup.iterdir())

    code, out, _ = cli("sources", "--json")
    listed = {row["path"]: row for row in json.loads(out)}
    assert code == 0
    assert {path: row["files"] for path, row in listed.items()} == {str(card): 3, str(backup): 2}

    code, out, _ = cli("sources", "--remove", str(listed[str(backup)]["id"]), "--json")
    assert code == 0
    gone = json.loads(out)
    assert (gone["files_removed"], gone["assets_removed"]) == (2, 1)  # IMG_0 stays: the card's
    assert sorted(p.name for p in backup.iterdir()) == on_disk
    code, out, _ = cli("assets", "--json")
    assert len(json.loads(out)) == 3
    code, out, _ = cli("sources")
    assert str(card) in out and str(backup) not in out

    code, _, err = cli("sources", "--remove", "999")
    assert code == 2 and "source_not_found" in err


def test_a_source_with_a_scan_queued_is_not_removed(cli, tmp_path):
    card = tmp_path / "card"
    photos.jpeg(card / "IMG_0.jpg", size=(24, 16), seed=0)
    lib = library()
    source = lib.catalog.add_source(card)
    lib.service.enqueue(scan.JOB_TYPE, lock=scan.lock_for(source["id"]), params={"sources": []})
    code, _, err = cli("sources", "--remove", str(source["id"]))
    assert code == 2 and "source_busy" in err
    assert [row["id"] for row in list_sources(lib.service)] == [source["id"]]


def test_a_source_outside_the_allowed_roots_is_pointed_out(cli, tmp_path, monkeypatch):
    inside, outside = tmp_path / "allowed/card", tmp_path / "elsewhere"
    inside.mkdir(parents=True)
    outside.mkdir()
    lib = library()
    lib.catalog.add_source(inside)
    lib.catalog.add_source(outside)
    rows = list_sources(lib.service, [tmp_path / "allowed"])
    assert {r["path"]: r["outside_allowed_roots"] for r in rows} == {
        str(inside): False,
        str(outside): True,
    }
    assert sources_outside(lib.service, [tmp_path / "allowed"]) == [str(outside)]
    assert sources_outside(lib.service, []) == []
    monkeypatch.setenv("PHOTO_PIPELINE_ALLOWED_ROOTS", str(tmp_path / "allowed"))
    lib.close()  # opened again with the allowed roots (unclosed, its connections leak)
    library.cache_clear()
    code, out, _ = cli("sources")
    assert code == 0 and "outside the allowed roots" in out.replace("\n", " ")
