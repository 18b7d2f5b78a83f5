"""A scan of given paths (what a watcher queues): exactly those paths and what lies
below the folders among them, never a rescan of the whole source, never a path
outside it, through a link, or that the whole scan leaves out."""

from __future__ import annotations

import os

from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.watch.batches import queue_scan
from tests.support.photo_jobs import run_library_jobs
from tests.support.watching import catalogued, present, watched_library, write_photos


def _imported(lib, folder):
    import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings)
    run_library_jobs(lib)
    return lib.catalog.add_source(folder)


def test_only_the_given_paths_are_looked_at(db_url, tmp_path):
    folder = tmp_path / "card"
    write_photos(folder, 2)
    with watched_library(db_url, tmp_path / "home") as lib:
        source = _imported(lib, folder)
        write_photos(folder, 2, prefix="NEW")
        os.unlink(folder / "IMG_00000.jpg")
        queue_scan(lib.service, lib.settings, source, ["NEW_00000.jpg"])
        run_library_jobs(lib)
        rows = catalogued(lib, source["id"])
    # NEW_00001 and the deletion were not given: a whole rescan would have seen them.
    assert set(rows) == {"IMG_00000.jpg", "IMG_00001.jpg", "NEW_00000.jpg"}
    assert {path for path, row in rows.items() if row[0] == "present"} == set(rows)


def test_a_given_folder_is_scanned_whole_and_a_vanished_one_is_missing(db_url, tmp_path):
    folder = tmp_path / "sync"
    write_photos(folder / "old", 2)
    with watched_library(db_url, tmp_path / "home") as lib:
        source = _imported(lib, folder)
        write_photos(folder / "arrived" / "deep", 2, prefix="ARR")
        os.rename(folder / "old", tmp_path / "elsewhere")
        queue_scan(lib.service, lib.settings, source, ["arrived", "old"])
        run_library_jobs(lib)
        rows = catalogued(lib, source["id"])
    assert {p for p, row in rows.items() if row[0] == "present"} == {
        "arrived/deep/ARR_00000.jpg",
        "arrived/deep/ARR_00001.jpg",
    }
    assert {rows[f"old/IMG_0000{n}.jpg"][0] for n in range(2)} == {"missing"}


def test_given_paths_never_lead_outside_the_source_nor_through_a_link(db_url, tmp_path):
    folder, outside = tmp_path / "phone", tmp_path / "private"
    write_photos(outside, 1, prefix="SECRET")
    folder.mkdir()
    os.symlink(outside, folder / "link")
    write_photos(folder, 1, prefix="SEEN")
    (folder / ".syncthing.IMG_1.jpg.tmp").write_bytes((folder / "SEEN_00000.jpg").read_bytes())
    with watched_library(db_url, tmp_path / "home") as lib:
        source = _imported(lib, folder)
        given = [
            "../private/SECRET_00000.jpg",
            str(outside / "SECRET_00000.jpg"),
            "link/SECRET_00000.jpg",
            "link",
            ".syncthing.IMG_1.jpg.tmp",
            "SEEN_00000.jpg",
        ]
        queue_scan(lib.service, lib.settings, source, given)
        run_library_jobs(lib)
        assert present(lib, source["id"]) == {"SEEN_00000.jpg"}
