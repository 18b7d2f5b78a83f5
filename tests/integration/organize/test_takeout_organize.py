"""Organize carries a Google Takeout export's JSONs along with the photos they
describe, renamed after each photo's new name so that an import of the organized
folder still dates and places every photo by them; undo brings them all back."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.integration.ingest.test_takeout_import import (
    LONG_NAME,
    PARIS,
    takeout_json,
    undated_jpeg,
)
from tests.support.import_jobs import catalogue_by_path, run_import
from tests.support.photo_jobs import run_organize, run_worker, tree

# New names without a date in them: the import below must date the photos by the
# JSONs, not by their names.
RENAMING = "{taken:%Y}/Trip {original_name}.{ext}"


def when(path_by_name: dict[str, dict], name: str) -> tuple[str, str]:
    asset = path_by_name[name]["asset"]
    return asset["taken_source"], asset["taken_local"]


def test_a_takeout_export_keeps_its_dates_through_organize(session_factory, tmp_path) -> None:
    export = tmp_path / "Takeout" / "Photos from 2019"
    undated_jpeg(export / "IMG_0001.JPG", 1)
    takeout_json(export / "IMG_0001.JPG.json", datetime(2019, 4, 5, 12, 34, 56, tzinfo=UTC), PARIS)
    undated_jpeg(export / LONG_NAME, 3)
    truncated = f"{LONG_NAME}.supplemental-metadata"[:46] + ".json"
    takeout_json(export / truncated, datetime(2019, 7, 2, 9, tzinfo=UTC))
    undated_jpeg(export / "IMG_0004.JPG", 4)
    takeout_json(export / "IMG_0004.JPG.json", datetime(2019, 8, 3, 10, tzinfo=UTC))
    undated_jpeg(export / "IMG_0004(1).JPG", 5)
    takeout_json(export / "IMG_0004.JPG(1).json", datetime(2019, 9, 4, 11, tzinfo=UTC))
    undated_jpeg(export / "IMG_0004-edited.JPG", 6)  # reads its original's JSON
    (export / "metadata.json").write_text('{"title": "Photos from 2019"}')  # the album's
    before = tree(export)
    run_import(session_factory, export)

    dest = tmp_path / "organized"
    plan = organize.plan_organize(session_factory, dest, RENAMING)
    job = run_organize(session_factory, dest, move=True, template=RENAMING)
    assert job["state"] == JobState.SUCCEEDED
    by_source = {Path(e["source"]).name: e for e in plan["entries"]}
    assert by_source["IMG_0001.JPG.json"]["kind"] == "sidecar"
    assert "metadata.json" not in by_source
    # Each JSON beside its photo, in its own form, after the photo's new name.
    long_json = f"Trip {LONG_NAME}.supplemental-metadata"[:46] + ".json"
    assert set(tree(dest)) == {
        "2019/Trip IMG_0001.jpg",
        "2019/Trip IMG_0001.jpg.json",
        f"2019/Trip {LONG_NAME}",
        f"2019/{long_json}",  # cut at 46 characters, as Takeout cuts
        "2019/Trip IMG_0004.jpg",
        "2019/Trip IMG_0004.jpg.json",  # the original's, which its edit also reads
        "2019/Trip IMG_0004(1).jpg",
        "2019/Trip IMG_0004(1).jpg.json",
        "2019/Trip IMG_0004-edited.jpg",
    }
    assert set(tree(export)) == {"metadata.json"}

    # An import of the organized folder alone, into a catalogue of its own, dates and
    # places every photo as the export did.
    fresh = open_database(f"sqlite:///{tmp_path / 'fresh.db'}")
    try:
        run_import(fresh, dest)
        again = catalogue_by_path(Catalog(fresh))
    finally:
        fresh.kw["bind"].dispose()
    assert when(again, "2019/Trip IMG_0001.jpg") == ("takeout", "2019-04-05T14:34:56")
    assert again["2019/Trip IMG_0001.jpg"]["asset"]["country_code"] == "FR"
    assert when(again, f"2019/Trip {LONG_NAME}") == ("takeout", "2019-07-02T09:00:00")
    assert when(again, "2019/Trip IMG_0004.jpg") == ("takeout", "2019-08-03T10:00:00")
    assert when(again, "2019/Trip IMG_0004(1).jpg") == ("takeout", "2019-09-04T11:00:00")
    assert when(again, "2019/Trip IMG_0004-edited.jpg") == ("takeout", "2019-08-03T10:00:00")

    undo = organize.start_undo(JobService(session_factory), job["id"]).job
    run_worker(session_factory, organize.UNDO_JOB_TYPE)
    assert JobService(session_factory).get(undo["id"])["state"] == JobState.SUCCEEDED
    assert tree(export) == before


def test_a_json_stays_with_its_photo_when_the_photo_is_not_moved(session_factory, tmp_path):
    export = tmp_path / "Takeout"
    undated_jpeg(export / "IMG_0001.JPG", 1)
    takeout_json(export / "IMG_0001.JPG.json", datetime(2019, 4, 5, 12, tzinfo=UTC))
    dest = tmp_path / "organized"
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    # An earlier organize placed this photo in the destination (under another name,
    # catalogued there): it is a duplicate, stays where it is, and so does its JSON.
    shutil.copyfile(export / "IMG_0001.JPG", earlier / "earlier.jpg")
    run_import(session_factory, earlier)
    assert run_organize(session_factory, dest, template=RENAMING)["state"] == JobState.SUCCEEDED
    run_import(session_factory, export)
    plan = organize.plan_organize(session_factory, dest, RENAMING, move=True)
    reasons = {
        Path(e["source"]).name: (e["action"], e["reason"])
        for e in plan["entries"]
        if Path(e["source"]).is_relative_to(export)
    }
    assert reasons == {
        "IMG_0001.JPG": ("skip", "duplicate"),
        "IMG_0001.JPG.json": ("skip", "photo_skipped"),
    }
