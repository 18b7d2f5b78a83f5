"""What the API shows of an asset: how far its date can be trusted, the camera as
people name it, a Live Photo's MOV named in its detail, sorts paged by cursor, and
"set date" on chosen assets with its undo."""

from __future__ import annotations

import os
import typing
from datetime import UTC, datetime

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.factories import photos, videos
from tests.support.api_server import running_server
from tests.support.photo_jobs import run_library_jobs


@pytest.fixture
def api(db_url, tmp_path):
    root = tmp_path / "roll"
    videos.live_photo(root, stem="IMG_0400")
    photos.jpeg(root / "berlin.jpg", size=(32, 24), seed=1, taken="2024:05:01 08:00:00",
                offset=None, gps=(52.5200, 13.4050, 10.0), make="Canon",
                model="Canon DIGITAL IXUS 400")  # fmt: skip
    photos.jpeg(root / "tokyo.jpg", size=(32, 24), seed=2, taken="2024:05:01 10:00:00",
                offset=None, gps=(35.6938, 139.7034, 10.0))  # fmt: skip
    copied = photos.jpeg(root / "IMG_0300.jpg", size=(32, 24), seed=3, taken=None, offset=None)
    moment = datetime(2026, 12, 1, 19, 21, 14, tzinfo=UTC).timestamp()
    os.utime(copied, (moment, moment))
    with running_server(db_url, tmp_path / "home") as server:
        import_folders(server.library.service, server.library.catalog, [root])
        run_library_jobs(server.library)
        yield server


def listed(http, **params) -> list[dict]:
    found, cursor = [], None
    while True:
        page = http.get("/api/assets", params={**params, **({"cursor": cursor} if cursor else {})})
        assert page.status_code == 200, page.text
        found += page.json()["assets"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return found


def test_the_confidences_are_the_media_layers():
    from photo_pipeline.api.library import Confidence
    from photo_pipeline.media.capture_time import CONFIDENCES

    assert typing.get_args(Confidence) == CONFIDENCES


def test_a_live_photos_detail_names_its_mov_with_size_and_duration(api):
    with api.client() as http:
        [live] = [a for a in listed(http) if a["live"]]
        detail = http.get(f"/api/assets/{live['id']}").json()
    motion = detail["motion"]
    assert motion is not None and motion["url"] == detail["motion_url"]
    [mov] = motion["files"]
    assert mov["path"] == "IMG_0400.MOV" and mov["size"] > 0 and mov["state"] == "present"
    assert motion["size"] == mov["size"] and 1.0 < motion["duration"] < 2.0
    assert [f["path"] for f in detail["files"]] == ["IMG_0400.HEIC"]


def test_dates_say_how_far_they_can_be_trusted_and_cameras_read_well(api):
    with api.client() as http:
        rows = {a["name"]: a for a in listed(http)}
        detail = http.get(f"/api/assets/{rows['IMG_0300.jpg']['id']}").json()
    assert rows["IMG_0300.jpg"]["taken_confidence"] == "file_time"
    assert rows["IMG_0300.jpg"]["undated"] is True and detail["undated"] is True
    assert detail["taken_confidence"] == "file_time"
    berlin = rows["berlin.jpg"]
    assert berlin["taken_confidence"] == "camera" and berlin["undated"] is False
    assert berlin["camera"] == "Canon DIGITAL IXUS 400" and berlin["model"].startswith("Canon")
    assert berlin["place"] == "Mitte, Berlin, Germany"
    assert berlin["file"]["path"] == "berlin.jpg"


def test_every_sort_pages_by_cursor_and_a_cursor_keeps_to_its_sort(api):
    with api.client() as http:
        by_local = listed(http, sort="taken", limit=1)
        by_instant = listed(http, sort="taken-utc", limit=1)
        added = listed(http, sort="added", limit=1)
        names = [a["name"] for a in by_local]
        assert names.index("berlin.jpg") < names.index("tokyo.jpg")
        names = [a["name"] for a in by_instant]
        assert names.index("tokyo.jpg") < names.index("berlin.jpg")
        assert [a["id"] for a in added] == sorted((a["id"] for a in added), reverse=True)
        assert len(by_local) == len(by_instant) == len(added) == 4
        cursor = http.get("/api/assets", params={"sort": "added", "limit": 1}).json()
        other = http.get("/api/assets", params={"sort": "taken", "cursor": cursor["next_cursor"]})
        assert other.status_code == 422 and other.json()["code"] == "invalid_cursor"
        bad = http.get("/api/assets", params={"sort": "size"})
        assert bad.status_code == 422


def test_set_date_through_the_jobs_api_and_its_undo(api):
    lib = api.library
    with api.client() as http:
        copied = next(a for a in listed(http) if a["name"] == "IMG_0300.jpg")
        params = {"asset_ids": [copied["id"]], "set": "2019-06-14T10:00"}
        created = http.post("/api/jobs", json={"type": "timeshift", "params": params})
        assert created.status_code == 201, created.text
        run_library_jobs(lib)
        detail = http.get(f"/api/assets/{copied['id']}").json()
        assert detail["taken_local"] == "2019-06-14T10:00:00"
        assert (detail["taken_source"], detail["taken_confidence"]) == ("user", "user")
        assert detail["undated"] is False
        undo = http.post(
            "/api/jobs", json={"type": "timeshift_undo", "params": {"job_id": created.json()["id"]}}
        )
        assert undo.status_code == 201, undo.text
        run_library_jobs(lib)
        detail = http.get(f"/api/assets/{copied['id']}").json()
        assert detail["taken_confidence"] == "file_time"
        for bad in (
            {"asset_ids": [copied["id"]], "set": "soon"},
            {"asset_ids": [copied["id"]], "set": "2019-06-14", "by": "+1h"},
            {"asset_ids": [copied["id"], 99999], "set": "2019-06-14"},
            {"set": "2019-06-14"},
            {"asset_ids": [], "set": "2019-06-14"},
        ):
            refused = http.post("/api/jobs", json={"type": "timeshift", "params": bad})
            assert refused.status_code == 422, (bad, refused.text)
            assert refused.headers["content-type"].startswith("application/problem+json")
