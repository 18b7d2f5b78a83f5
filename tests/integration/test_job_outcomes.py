"""Outcomes that say what happened (issue 30, findings 2 and 5): a job whose items
failed, a verify that found changed or missing files, reads as needing attention in
the CLI and the API, never as plain success; its failed files are named by their
folder, with what to do; the coordinator's internals stay in ``--json``."""

from __future__ import annotations

import json
import re

import pytest

from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.verify import start_verify
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.photo_jobs import run_worker, scan_folders


def flip_one_bit(path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


@pytest.fixture
def verified(session_factory, tmp_path):
    """A catalogued folder (one broken file), then a verify that found one file
    changed and one missing; returns (verify job id, photos folder)."""
    root = tmp_path / "photos"
    for n in range(4):
        photos.jpeg(root / f"day/IMG_{n}.jpg", size=(24, 16), seed=n)
    (root / "day/IMG_9.JPG").write_bytes(b"\xff\xd8\xff\xe0 not a photo")
    scan_folders(session_factory, root)
    flip_one_bit(root / "day/IMG_1.jpg")
    (root / "day/IMG_2.jpg").unlink()
    service = JobService(session_factory)
    job = start_verify(service).job
    run_worker(session_factory, "verify")
    return job["id"], root


def test_jobs_lists_a_verify_with_findings_as_problems_not_success(cli, verified):
    verify_id, _ = verified
    code, out, _ = cli("jobs")
    assert code == 0
    [row] = [line for line in out.splitlines() if verify_id in line]
    assert "succeeded · 2 problems" in row
    assert "content_changed, missing" in row  # the error column names what went wrong
    [scan] = [line for line in out.splitlines() if "│ scan" in line]
    assert "succeeded · 1 problem " in scan  # singular

    code, out, _ = cli("jobs", "--json")
    jobs = {job["id"]: job for job in json.loads(out)}
    assert jobs[verify_id]["state"] == "succeeded"  # the state machine's, unchanged
    assert (jobs[verify_id]["outcome"], jobs[verify_id]["problems"]) == (
        "succeeded_with_problems",
        2,
    )


def test_job_show_names_each_file_in_its_folder_with_what_to_do(cli, verified):
    verify_id, root = verified
    code, out, _ = cli("job", "show", verify_id[:8])
    assert code == 0
    assert re.search(r"state succeeded · 2 problems\n", out), out
    assert "items 4 of 4 items: 2 succeeded, 2 failed\n" in out
    assert f"failed IMG_1.jpg in {root / 'day'}: content_changed" in out
    assert f"failed IMG_2.jpg in {root / 'day'}: missing" in out
    assert "restore it from a backup" in out and "photo-pipeline verify` again" in out
    assert f"`photo-pipeline import {root}`" in out
    assert "lock the library: one organize, dedupe, timeshift or verify at a time" in out
    assert "{'" not in out and ":IMG_" not in out  # no dicts, no source ids

    code, out, _ = cli("job", "show", verify_id, "--json")
    shown = json.loads(out)
    assert shown["outcome"] == "succeeded_with_problems"
    found = {item["name"]: item for item in shown["failed_items"]}
    assert found["IMG_2.jpg"]["folder"] == str(root / "day")
    assert "Put it back from a backup" in found["IMG_2.jpg"]["advice"]


def test_job_events_text_has_no_fencing_tokens_but_json_keeps_them(cli, verified):
    verify_id, _ = verified
    code, out, _ = cli("job", "events", verify_id)
    assert code == 0
    assert "fencing_token" not in out and "{'" not in out, out
    assert re.search(r"claimed by worker \S+ \(attempt 1\)", out), out
    assert re.search(r"\d+ items added", out) and "items: 2 failed, 2 succeeded" in out
    code, out, _ = cli("job", "events", verify_id, "--json")
    claimed = [json.loads(line) for line in out.splitlines() if '"claimed"' in line]
    assert claimed[0]["data"]["fencing_token"] >= 1


def test_a_waited_import_names_its_failed_file_and_counts_in_words(cli, tmp_path):
    root = tmp_path / "photos"
    photos.jpeg(root / "IMG_0001.JPG", size=(24, 16), seed=1)
    (root / "IMG_0003.JPG").write_bytes(b"\xff\xd8\xff\xe0 not a photo")
    code, out, _ = cli("import", str(root), "--wait")
    assert code == 5  # exit codes stay as they were
    [scan] = [line for line in out.splitlines() if line.startswith("scan job")]
    assert re.search(
        r": succeeded · 1 problem, 2 of 2 items done; 1 failed: IMG_0003\.JPG \(corrupt_file: ",
        scan,
    ), scan
    assert "{'" not in out and "1:IMG" not in out

    (root / "IMG_0003.JPG").unlink()
    code, out, _ = cli("verify", "--wait")
    assert code == 0
    assert ": succeeded, 1 file checked, 1 ok, 0 changed, 0 missing" in out, out


def test_the_api_job_resource_has_its_outcome_and_its_items_their_folders(
    db_url, session_factory, verified
):
    verify_id, root = verified
    with running_server(db_url, root.parent / "home") as server, server.client() as http:
        job = http.get(f"/api/jobs/{verify_id}").json()
        assert (job["state"], job["outcome"], job["problems"]) == (
            "succeeded",
            "succeeded_with_problems",
            2,
        )
        assert job["lock_words"].startswith("the library")
        listed = {j["id"]: j for j in http.get("/api/jobs").json()["jobs"]}
        assert listed[verify_id]["outcome"] == "succeeded_with_problems"
        scan = next(j for j in listed.values() if j["type"] == "scan")
        assert scan["lock_words"] == f"scanning {root}"
        items = http.get(f"/api/jobs/{verify_id}/items", params={"state": "failed"}).json()
        found = {item["name"]: item for item in items["items"]}
        assert set(found) == {"IMG_1.jpg", "IMG_2.jpg"}
        assert found["IMG_1.jpg"]["folder"] == str(root / "day")
        assert found["IMG_1.jpg"]["error_code"] == "content_changed"
        assert "restore it from a backup" in found["IMG_1.jpg"]["advice"]
        ok = http.get(f"/api/jobs/{verify_id}/items", params={"state": "succeeded"}).json()
        assert all(item["advice"] is None for item in ok["items"])
        schema = http.get("/openapi.json").json()["components"]["schemas"]
    assert "succeeded_with_problems" in schema["Outcome"]["enum"]
    assert "outcome" in schema["Job"]["properties"]
    assert "problems" in schema["Job"]["properties"]["outcome"]["description"]


def test_every_kind_of_item_key_is_named_by_its_file(session_factory, verified):
    from sqlalchemy import select

    from photo_pipeline.db.schema import files
    from photo_pipeline.pipeline.job_words import ItemPlace, item_places

    _, root = verified
    with session_factory() as session:
        asset_id = session.scalar(select(files.c.asset_id).where(files.c.path == "day/IMG_3.jpg"))
    day = str(root / "day")
    # render: asset id first (then hash and path); similar, places, timeshift alike.
    for job_type, key in [
        ("render", f"{asset_id}:abc123:/somewhere/else.jpg"),
        ("similar", f"{asset_id}:thumbs/ab/cd.webp"),
        ("timeshift", str(asset_id)),
    ]:
        assert item_places(session_factory, job_type, [key])[key] == ItemPlace(
            "IMG_3.jpg", day, str(root)
        ), job_type
    # organize and dedupe: entry number, then the path relative to its source.
    assert item_places(session_factory, "organize", ["7:day/IMG_3.jpg"])[
        "7:day/IMG_3.jpg"
    ] == ItemPlace("IMG_3.jpg", "day")
    # A job type of no photo knowledge: its key as it is.
    assert item_places(session_factory, "test.record", ["a:b"])["a:b"] == ItemPlace("a:b", None)
    # An asset no longer catalogued: its key.
    assert item_places(session_factory, "render", ["999999:x:y"])["999999:x:y"].folder is None
