"""Set date: chosen assets get one local date and time, the date becomes the user's
(trusted, no longer undated), a re-read keeps it, and undo gives back date and source."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.media.capture_time import UNDATED_SOURCES, confidence
from photo_pipeline.pipeline import timeshift
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos, videos
from tests.support.photo_jobs import run_worker

COPIED_TODAY = datetime(2026, 12, 1, 19, 21, 14, tzinfo=UTC).timestamp()


def by_name(session_factory) -> dict[str, dict]:
    catalog = Catalog(session_factory)
    rows = {a["id"]: a for a in catalog.iter_assets()}
    # the motion part of a Live Photo is not listed: read it by its file
    shown = {f["path"]: rows.get(f["asset_id"]) for f in catalog.files()}
    return {name: row for name, row in shown.items() if row is not None}


@pytest.fixture
def library(session_factory, tmp_path) -> JobService:
    root = tmp_path / "photos"
    # no date inside: only the file's mtime (a copy made "today")
    for n in range(2):
        undated = photos.jpeg(root / f"scan-{n}.jpg", size=(32, 24), seed=n, taken=None,
                              offset=None, make="EPSON", model="Perfection V39")  # fmt: skip
        os.utime(undated, (COPIED_TODAY, COPIED_TODAY + n))
    photos.jpeg(root / "camera.jpg", size=(32, 24), seed=5, taken="2024:03:30 10:00:00")
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker(session_factory)
    return service


def test_set_date_makes_undated_assets_the_users_and_undo_gives_them_back(library, session_factory):
    before = by_name(session_factory)
    assert {before[f"scan-{n}.jpg"]["taken_source"] for n in range(2)} <= UNDATED_SOURCES
    ids = [before["scan-0.jpg"]["id"], before["scan-1.jpg"]["id"]]

    plan = timeshift.plan_timeshift(session_factory, asset_ids=ids, set_to="2019-06-14T10:00")
    assert plan["count"] == 2 and plan["set"] == "2019-06-14T10:00:00" and plan["by"] is None
    assert {e["taken_local_after"] for e in plan["assets"]} == {"2019-06-14T10:00:00"}
    assert by_name(session_factory) == before  # a dry run changes nothing

    job = timeshift.start_timeshift(library, asset_ids=ids, set_to="2019-06-14T10:00").job
    run_worker(session_factory)
    assert library.get(job["id"])["state"] == JobState.SUCCEEDED
    after = by_name(session_factory)
    for n in range(2):
        scan = after[f"scan-{n}.jpg"]
        assert scan["taken_local"] == "2019-06-14T10:00:00"
        assert scan["taken_source"] == timeshift.USER_SOURCE
        assert confidence(scan["taken_source"]) == "user"  # trusted: not undated
    assert after["camera.jpg"] == before["camera.jpg"]  # not chosen, not changed

    undo = timeshift.start_undo(library, job["id"]).job
    run_worker(session_factory)
    assert library.get(undo["id"])["state"] == JobState.SUCCEEDED
    restored = by_name(session_factory)
    for name in ("scan-0.jpg", "scan-1.jpg"):
        assert {k: v for k, v in restored[name].items() if k != "updated_at"} == {
            k: v for k, v in before[name].items() if k != "updated_at"
        }


def test_a_reread_keeps_the_date_the_user_set(library, session_factory, tmp_path):
    scan = by_name(session_factory)["scan-0.jpg"]
    timeshift.start_timeshift(library, asset_ids=[scan["id"]], set_to="2019-06-14")
    run_worker(session_factory)
    import_folders(library, Catalog(session_factory), [tmp_path / "photos"], reread=True)
    run_worker(session_factory)
    again = by_name(session_factory)["scan-0.jpg"]
    assert (again["taken_local"], again["taken_source"]) == ("2019-06-14T00:00:00", "user")


def test_a_live_photo_is_dated_with_its_motion_part(session_factory, tmp_path):
    videos.live_photo(tmp_path / "roll", stem="IMG_0300")
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [tmp_path / "roll"])
    run_worker(session_factory)
    [listed] = Catalog(session_factory).assets()
    plan = timeshift.plan_timeshift(
        session_factory, asset_ids=[listed["id"]], set_to="2020-01-02T03:04:05"
    )
    assert plan["count"] == 2  # the still and its MOV
    assert {e["asset_id"] for e in plan["assets"]} == {listed["id"], listed["motion_asset_id"]}


def test_bad_set_requests_are_refused_with_codes(library, session_factory):
    scan = by_name(session_factory)["scan-0.jpg"]
    for bad in ("yesterday", "2019-06-14T10:00+02:00", "1700-01-01", "2019-13-01"):
        with pytest.raises(timeshift.InvalidShift):
            timeshift.start_timeshift(library, asset_ids=[scan["id"]], set_to=bad)
    with pytest.raises(timeshift.InvalidShift):  # a shift and a set at once
        timeshift.start_timeshift(library, asset_ids=[scan["id"]], by="+1h", set_to="2019-06-14")
    with pytest.raises(timeshift.InvalidShift):  # neither a camera nor assets
        timeshift.start_timeshift(library, set_to="2019-06-14")
    with pytest.raises(timeshift.UnknownAssets) as unknown:
        timeshift.start_timeshift(library, asset_ids=[scan["id"], 999_999], set_to="2019-06-14")
    assert unknown.value.code == "asset_not_found" and "999999" in unknown.value.detail


def test_command_line_sets_a_date_and_undoes_it(cli, tmp_path):
    root = tmp_path / "photos"
    undated = photos.jpeg(root / "scan.jpg", size=(32, 24), taken=None, offset=None)
    os.utime(undated, (COPIED_TODAY, COPIED_TODAY))
    assert cli("import", str(root), "--wait", "--json")[0] == 0
    [asset] = json.loads(cli("assets", "--json")[1])
    assert asset["taken_confidence"] == "file_time"

    chosen = ("--asset", str(asset["id"]), "--set", "2019-06-14T10:00")
    code, out, _ = cli("timeshift", *chosen, "--dry-run")
    assert code == 0 and "would get the date 2019-06-14T10:00:00" in out
    code, out, _ = cli("timeshift", *chosen, "--wait", "--json")
    job = json.loads(out)
    assert code == 0 and job["state"] == JobState.SUCCEEDED
    [asset] = json.loads(cli("assets", "--json")[1])
    assert (asset["taken_local"], asset["taken_confidence"]) == ("2019-06-14T10:00:00", "user")
    code, out, _ = cli("timeshift", "--undo", job["id"], "--wait", "--json")
    assert code == 0 and json.loads(out)["state"] == JobState.SUCCEEDED
    [asset] = json.loads(cli("assets", "--json")[1])
    assert asset["taken_confidence"] == "file_time"
    code, _, err = cli("timeshift", "--asset", str(asset["id"]), "--set", "soon")
    assert code == 2 and "invalid_shift" in err
