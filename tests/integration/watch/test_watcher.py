"""A real watcher on a real folder, in this process, with a real worker: files copied in
slowly, a big file still being written by another process, a burst, deletions and
renames, changes made while no watcher ran, and a polled source."""

from __future__ import annotations

import dataclasses
import logging
import os
import shutil

from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.ingest.sources import set_watch
from photo_pipeline.pipeline.watch.leases import active_watchers
from tests.factories import photos
from tests.support.cli_processes import wait_until
from tests.support.watching import (
    FAST,
    SlowWriter,
    catalogued,
    present,
    running_watchers,
    running_worker,
    wait_for_jobs,
    watched_library,
    watcher_scans,
    write_photos,
)


def _watched_source(lib, folder):
    """``folder`` imported (empty, or as it is) with ``--watch``: its source row."""
    folder.mkdir(parents=True, exist_ok=True)
    import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings, watch=True)
    # The import's own scan takes files as they are, settled or not: its chain ends first.
    wait_for_jobs(lib)
    return lib.catalog.add_source(folder)  # registered already: its row


def test_files_copied_in_slowly_are_catalogued_as_each_settles(db_url, tmp_path):
    folder = tmp_path / "phone"
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        with running_watchers(lib):
            for n in range(3):
                photo = photos.jpeg(tmp_path / f"IMG_{n}.jpg", size=(320, 240), seed=n)
                writer = SlowWriter(photo, folder / photo.name)  # chunk by chunk
                writer.more()
                writer.more()
                writer.finish()
                wait_until(lambda n=n: f"IMG_{n}.jpg" in present(lib, source["id"]), "catalogued")
        rows = catalogued(lib, source["id"])
    assert {path: row[0] for path, row in rows.items()} == {
        f"IMG_{n}.jpg": "present" for n in range(3)
    }
    assert all(asset is not None for _, asset, _ in rows.values())
    assert all(size == (tmp_path / path).stat().st_size for path, (_, _, size) in rows.items())


def test_a_file_held_open_by_its_writer_is_not_taken_half_written(db_url, tmp_path):
    """A big file another process writes in chunks, held open between them, stays out
    of the catalogue while a file written after it settles and is catalogued; once
    its writer closes it, it is catalogued whole."""
    folder = tmp_path / "card"
    content = photos.jpeg(tmp_path / "VIDEO.jpg", size=(640, 480), seed=7)
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        with running_watchers(lib):
            writer = SlowWriter(content, folder / "BIG.jpg")
            writer.more()
            writer.more()
            # Written after the big file's last chunk: once it is catalogued, the big
            # file has stood unchanged longer than the settle time.
            write_photos(folder, 1, prefix="PROBE")
            wait_until(lambda: "PROBE_00000.jpg" in present(lib, source["id"]), "the probe")
            assert "BIG.jpg" not in catalogued(lib, source["id"])
            writer.finish()
            wait_until(lambda: "BIG.jpg" in present(lib, source["id"]), "the big file")
        state, asset, size = catalogued(lib, source["id"])["BIG.jpg"]
    assert (state, size) == ("present", content.stat().st_size)
    assert asset is not None


def test_a_burst_is_a_few_scans_of_exactly_the_changed_paths(db_url, tmp_path):
    folder = tmp_path / "card"
    write_photos(folder / "old", 3)  # there before: never scanned again
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        wait_until(lambda: len(present(lib, source["id"])) == 3, "the import")
        with running_watchers(lib):
            wait_until(lambda: active_watchers(lib.sessions), "the watcher")
            burst = write_photos(folder / "DCIM" / "100CANON", 1500)
            burst += write_photos(folder, 500, prefix="ROOT")
            expected = {str(p.relative_to(folder)) for p in burst}
            wait_until(lambda: expected <= present(lib, source["id"]), "the burst catalogued", 300)
        scans = watcher_scans(lib)
    given = [path for scan in scans for path in scan["paths"]]
    assert 1 <= len(scans) <= 10
    assert sorted(given) == sorted(expected)  # each changed file once; nothing else


def test_deletions_and_renames_are_noticed(db_url, tmp_path):
    folder = tmp_path / "sync"
    write_photos(folder / "trip", 3)
    write_photos(folder, 2, prefix="LOOSE")
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        wait_until(lambda: len(present(lib, source["id"])) == 5, "the import")
        before = catalogued(lib, source["id"])
        with running_watchers(lib):
            wait_until(lambda: active_watchers(lib.sessions), "the watcher")
            os.rename(folder / "trip", folder / "holiday")
            os.rename(folder / "LOOSE_00000.jpg", folder / "kept.jpg")
            os.unlink(folder / "LOOSE_00001.jpg")
            wanted = {
                "holiday/IMG_00000.jpg",
                "holiday/IMG_00001.jpg",
                "holiday/IMG_00002.jpg",
                "kept.jpg",
            }
            wait_until(lambda: present(lib, source["id"]) == wanted, "the changes", 60)
        after = catalogued(lib, source["id"])
    # A renamed file is the same asset under its new name (its row follows it, as a
    # rescan's does); the deleted one's asset has no present file left.
    for n in range(3):
        assert after[f"holiday/IMG_{n:05d}.jpg"][1] == before[f"trip/IMG_{n:05d}.jpg"][1]
    assert after["kept.jpg"][1] == before["LOOSE_00000.jpg"][1]
    held = {asset for state, asset, _ in after.values() if state == "present"}
    assert before["LOOSE_00001.jpg"][1] not in held
    assert after.get("LOOSE_00001.jpg", ("missing",))[0] == "missing"


def test_changes_made_while_no_watcher_ran_are_caught_by_the_first_pass(db_url, tmp_path):
    folder = tmp_path / "backup"
    write_photos(folder, 2)
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        wait_until(lambda: len(present(lib, source["id"])) == 2, "the import")
        write_photos(folder, 3, prefix="NEW")  # no watcher runs
        os.unlink(folder / "IMG_00000.jpg")
        with running_watchers(lib):
            wanted = {"IMG_00001.jpg", "NEW_00000.jpg", "NEW_00001.jpg", "NEW_00002.jpg"}
            wait_until(lambda: present(lib, source["id"]) == wanted, "the first pass", 60)
        scans = watcher_scans(lib)
    assert sorted(p for scan in scans for p in scan["paths"]) == [
        "IMG_00000.jpg",
        "NEW_00000.jpg",
        "NEW_00001.jpg",
        "NEW_00002.jpg",
    ]


def test_a_polled_source_is_rescanned_and_says_why_once(db_url, tmp_path, caplog):
    folder = tmp_path / "nas"
    config = dataclasses.replace(FAST, force_poll=True)
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        with (
            caplog.at_level(logging.WARNING, "photo_pipeline.pipeline.watch"),
            running_watchers(lib, config),
        ):
            write_photos(folder, 2)
            wait_until(lambda: len(present(lib, source["id"])) == 2, "the first files")
            [watcher] = active_watchers(lib.sessions)
            write_photos(folder / "more", 2, prefix="MORE")
            shutil.rmtree(folder / "more")
            write_photos(folder, 1, prefix="LAST")
            wanted = {"IMG_00000.jpg", "IMG_00001.jpg", "LAST_00000.jpg"}
            wait_until(lambda: present(lib, source["id"]) == wanted, "the next poll")
    assert watcher["mode"] == "poll"
    said = [r.getMessage() for r in caplog.records if "not watched" in r.getMessage()]
    assert len(said) == 1 and "PHOTO_PIPELINE_WATCH_POLL" in said[0]


def test_an_unwatched_source_has_its_watcher_stopped(db_url, tmp_path):
    folder = tmp_path / "phone"
    with watched_library(db_url, tmp_path / "home") as lib, running_worker(lib):
        source = _watched_source(lib, folder)
        with running_watchers(lib) as service:
            wait_until(lambda: active_watchers(lib.sessions), "the watcher")
            set_watch(lib.service, [source["id"]], False)
            wait_until(lambda: not active_watchers(lib.sessions), "the lease given back")
            assert not service.watching()
