"""Camera clock correction: a timeshift changes only one camera's assets in its window,
its undo restores them exactly, and it never runs beside organize (the library lock)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from sqlalchemy import select

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db.schema import assets, timeshift_entries
from photo_pipeline.jobs import JobBlocked, JobService, JobState
from photo_pipeline.pipeline import timeshift
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.support.photo_jobs import run_worker

PARIS = (48.8566, 2.3522, 35.0)

# name -> (model, EXIF date, EXIF offset, GPS)
LIBRARY = {
    "r5-before.jpg": ("EOS R5", "2024:03:29 10:00:00", None, None),
    "r5-in-1.jpg": ("EOS R5", "2024:03:30 23:50:00", None, None),
    # GPS zone: 01:30 +01:00 before the DST change, moved past it it is +02:00
    "r5-in-dst.jpg": ("EOS R5", "2024:03:31 01:30:00", None, PARIS),
    "r5-in-offset.jpg": ("EOS R5", "2024:03:31 12:00:00", "+02:00", None),
    "r5-after.jpg": ("EOS R5", "2024:04:02 09:00:00", None, None),
    "r50-in.jpg": ("EOS R50", "2024:03:31 12:00:00", None, None),  # a longer model name
    "phone-in.jpg": ("iPhone 14 Pro", "2024:03:31 12:00:00", "+02:00", PARIS),
}
IN_WINDOW = {"r5-in-1.jpg", "r5-in-dst.jpg", "r5-in-offset.jpg"}


def snapshot(session_factory) -> dict[str, dict]:
    """Every asset column except updated_at, by file name."""
    catalog = Catalog(session_factory)
    rows = {a["id"]: a for a in catalog.assets()}
    return {
        f["path"]: {k: v for k, v in rows[f["asset_id"]].items() if k != "updated_at"}
        for f in catalog.files()
    }


@pytest.fixture
def library(session_factory, tmp_path) -> JobService:
    root = tmp_path / "photos"
    for n, (name, (model, taken, offset, gps)) in enumerate(LIBRARY.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, subsec=None, make="Canon",
                    model=model, taken=taken, offset=offset, gps=gps)  # fmt: skip
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [root])
    run_worker(session_factory)
    return service


def test_shift_changes_only_that_camera_in_the_window_and_undo_restores_it(
    library, session_factory
):
    before = snapshot(session_factory)
    plan = timeshift.plan_timeshift(
        session_factory, camera="eos r5", by="+2h15m", since="2024-03-30", until="2024-03-31"
    )
    assert plan["count"] == 3 and plan["by"] == "+2h15m"
    assert snapshot(session_factory) == before  # a dry run changes nothing

    job = timeshift.start_timeshift(
        library, camera="eos r5", by="+2h15m", since="2024-03-30", until="2024-03-31"
    ).job
    run_worker(session_factory)
    assert library.get(job["id"])["state"] == JobState.SUCCEEDED
    after = snapshot(session_factory)

    changed = {name for name in LIBRARY if after[name] != before[name]}
    assert changed == IN_WINDOW
    planned = {e["asset_id"]: e for e in plan["assets"]}
    for name in IN_WINDOW:
        entry = planned[after[name]["id"]]
        assert (entry["taken_local_after"], entry["taken_utc_after"]) == (
            after[name]["taken_local"],
            after[name]["taken_utc"],
        ), "the dry run showed what the job did"
    assert after["r5-in-1.jpg"]["taken_local"] == "2024-03-31T02:05:00"
    assert after["r5-in-1.jpg"]["taken_utc"] is None  # floating stays floating
    assert after["r5-in-1.jpg"]["taken_order"] == datetime(2024, 3, 31, 2, 5, tzinfo=UTC)
    # moved across the DST change, its GPS zone gives the new offset
    dst = after["r5-in-dst.jpg"]
    assert (dst["taken_local"], dst["taken_offset_minutes"]) == ("2024-03-31T03:45:00", 120)
    assert dst["taken_utc"] == datetime(2024, 3, 31, 1, 45, tzinfo=UTC)
    # the camera's own offset stays as it wrote it
    fixed = after["r5-in-offset.jpg"]
    assert (fixed["taken_local"], fixed["taken_offset_minutes"]) == ("2024-03-31T14:15:00", 120)
    assert fixed["taken_utc"] == datetime(2024, 3, 31, 12, 15, tzinfo=UTC)

    undo = timeshift.start_undo(library, job["id"]).job
    run_worker(session_factory)
    assert library.get(undo["id"])["state"] == JobState.SUCCEEDED
    assert snapshot(session_factory) == before
    with pytest.raises(timeshift.NotATimeshift) as nothing:
        timeshift.start_undo(library, job["id"])
    assert nothing.value.code == "nothing_to_undo"


def test_rerunning_a_batch_shifts_nothing_twice(library, session_factory):
    ids = [a["id"] for a in Catalog(session_factory).assets(camera="EOS R5")]
    shift = timeshift.parse_shift("+1h")
    timeshift.apply_shift(session_factory, "job-a", ids, shift)
    once = snapshot(session_factory)
    timeshift.apply_shift(session_factory, "job-a", ids, shift)  # as after a crash
    assert snapshot(session_factory) == once
    with session_factory() as session:
        entries = session.execute(select(timeshift_entries.c.asset_id)).scalars().all()
    assert sorted(entries) == sorted(ids)


def test_undo_refuses_assets_changed_after_the_shift(library, session_factory):
    before = snapshot(session_factory)
    assert before["phone-in.jpg"]["tz_name"] == "Europe/Paris"  # +02:00 agrees with Paris
    first = timeshift.start_timeshift(library, camera="iPhone 14 Pro", by="-12h").job
    run_worker(session_factory)
    # at midnight Paris was still at +01:00: the camera's +02:00 no longer names it
    assert snapshot(session_factory)["phone-in.jpg"]["tz_name"] == "UTC+02:00"
    second = timeshift.start_timeshift(library, camera="iPhone 14 Pro", by="-3m").job
    run_worker(session_factory)
    out_of_order = timeshift.start_undo(library, first["id"]).job
    run_worker(session_factory)
    failed = library.items(out_of_order["id"], states=["failed"])
    assert [item["error_code"] for item in failed] == ["changed_since_shift"]
    # undone newest first, both restore exactly
    timeshift.start_undo(library, second["id"])
    run_worker(session_factory)
    again = timeshift.start_undo(library, first["id"]).job
    run_worker(session_factory)
    assert library.get(again["id"])["state"] == JobState.SUCCEEDED
    assert snapshot(session_factory) == before


def test_timeshift_holds_the_library_lock_that_organize_takes(library, session_factory):
    organize_like = library.enqueue("organize", lock=timeshift.LIBRARY_LOCK)
    with pytest.raises(JobBlocked) as blocked:
        timeshift.start_timeshift(library, camera="EOS R5", by="+1h")
    assert blocked.value.code == "lock_held"
    library.cancel(organize_like["id"])
    job = timeshift.start_timeshift(library, camera="EOS R5", by="+1h").job
    with pytest.raises(JobBlocked):
        library.enqueue("organize", lock=timeshift.LIBRARY_LOCK)
    with pytest.raises(JobBlocked):  # nor can it be undone while it runs
        timeshift.start_undo(library, job["id"])


def test_bad_requests_are_refused_with_codes(library, session_factory):
    with pytest.raises(timeshift.NothingToShift):
        timeshift.start_timeshift(library, camera="EOS R", by="+1h")  # no such model
    with pytest.raises(timeshift.InvalidShift):
        timeshift.start_timeshift(library, camera="EOS R5", by="soon")
    with pytest.raises(timeshift.NotATimeshift):
        scan_job = library.list_jobs()[0]
        timeshift.start_undo(library, scan_job["id"])
    with session_factory() as session:
        assert session.execute(select(timeshift_entries)).first() is None
        assert session.execute(select(assets.c.id)).first() is not None


def test_command_line(cli, tmp_path):
    root = tmp_path / "photos"
    for n, (name, (model, taken, offset, gps)) in enumerate(LIBRARY.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, subsec=None, make="Canon",
                    model=model, taken=taken, offset=offset, gps=gps)  # fmt: skip
    assert cli("import", str(root), "--wait", "--json")[0] == 0
    code, out, _ = cli("assets", "--place", "paris", "--json")
    assert code == 0 and {a["model"] for a in json.loads(out)} == {"EOS R5", "iPhone 14 Pro"}

    window = ("--camera", "EOS R5", "--by", "-1d", "--since", "2024-03-31", "--until", "2024-03-31")
    code, out, _ = cli("timeshift", *window, "--dry-run", "--json")
    plan = json.loads(out)
    assert code == 0 and plan["count"] == 2 and plan["by"] == "-1d"
    code, out, _ = cli("timeshift", *window, "--wait", "--json")
    job = json.loads(out)
    assert code == 0 and job["state"] == JobState.SUCCEEDED
    code, out, _ = cli("timeshift", "--undo", job["id"], "--wait", "--json")
    assert code == 0 and json.loads(out)["state"] == JobState.SUCCEEDED
    code, _, err = cli("timeshift", "--undo", job["id"])
    assert code == 2 and "nothing_to_undo" in err
    code, _, err = cli("timeshift", "--camera", "EOS R5", "--by", "yesterday")
    assert code == 2 and "invalid_shift" in err
    code, out, _ = cli("places", "--wait", "--json")
    assert code == 0 and json.loads(out)["state"] == JobState.SUCCEEDED
