"""XMP sidecars over the HTTP API, on both databases: a curation request queues the
writer, the asset's detail says where its curation is kept, and xmp_write /
xmp_write_undo are job types of POST /api/jobs."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline import xmp
from tests.integration.api.test_api_library import import_sample
from tests.integration.xmp.xmp_library import exiftool_tags
from tests.support.photo_jobs import run_library_jobs


@pytest.fixture
def api(db_url, tmp_path):
    from tests.support.api_server import running_server

    with running_server(db_url, tmp_path / "home") as server:
        import_sample(server, tmp_path / "photos")
        yield server, tmp_path / "photos"


def test_a_rating_through_the_api_lands_in_the_sidecar_and_is_undone(api):
    server, folder = api
    with server.client() as http:
        first = http.get("/api/assets", params={"sort": "taken"}).json()["assets"][0]["id"]
        assert http.get(f"/api/assets/{first}").json()["xmp"] is None
        assert http.put(f"/api/assets/{first}/rating", json={"rating": 3}).status_code == 200
        [queued] = http.get("/api/jobs", params={"type": xmp.JOB_TYPE}).json()["jobs"]
        assert queued["state"] == "queued"
        assert http.get(f"/api/assets/{first}").json()["xmp"]["state"] == "pending"
        run_library_jobs(server.library)
        said = http.get(f"/api/assets/{first}").json()["xmp"]
        assert (said["state"], said["pending"]) == ("written", False)
        [sidecar] = list(folder.rglob(said["sidecar"]))
        assert exiftool_tags(sidecar)["XMP-xmp:Rating"] == 3

        nothing = http.post("/api/jobs", json={"type": "xmp_write", "params": {}})
        assert nothing.status_code == 422, nothing.text
        assert nothing.json()["code"] == "nothing_to_write"
        undo = http.post(
            "/api/jobs", json={"type": "xmp_write_undo", "params": {"job_id": queued["id"]}}
        )
        assert undo.status_code == 201, undo.text
        run_library_jobs(server.library)
        assert http.get(f"/api/jobs/{undo.json()['id']}").json()["state"] == "succeeded"
        assert not sidecar.exists()  # there was none before
        again = http.post(
            "/api/jobs", json={"type": "xmp_write_undo", "params": {"job_id": queued["id"]}}
        )
        assert again.status_code == 422 and again.json()["code"] == "nothing_to_undo"
