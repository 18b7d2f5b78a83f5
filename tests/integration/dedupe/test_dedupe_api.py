"""dedupe over a real server (#16): the plan route, the job types through the API's
registry, the duplicates listing before, after and after the undo."""

from __future__ import annotations

import pytest

from tests.support.api_server import running_server
from tests.support.dedupe_library import library_fixture, sha256_tree  # noqa: F401
from tests.support.photo_jobs import run_library_jobs


@pytest.fixture
def api(db_url, tmp_path, library):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def test_plan_apply_and_undo_through_the_api(api, library):
    before = sha256_tree(library)
    with api.client() as http:
        plan = http.get("/api/dedupe/plan")
        assert plan.status_code == 200, plan.text
        plan = plan.json()
        assert plan["summary"]["files"] == 13 and not plan["truncated"]
        assert all(g["why"] and g["keeper"] for g in plan["groups"])
        assert http.get("/api/dedupe/plan", params={"limit": 1}).json()["truncated"] is True
        assert (
            http.get("/api/dedupe/plan", params={"near": "true"}).json()["summary"]["files"] == 14
        )
        assert http.get("/api/dedupe/plan", params={"limit": 0}).status_code == 422

        listed = http.get("/api/duplicates").json()["exact"]
        keepers = {g["keeper"] for g in plan["groups"]}
        assert {g["keeper"] for g in listed} == keepers
        assert all(g["files"][0]["keep"] and g["why"] for g in listed)

        started = http.post("/api/jobs", json={"type": "dedupe", "params": {}})
        assert started.status_code == 201, started.text
        job = started.json()
        run_library_jobs(api.library)
        assert http.get(f"/api/jobs/{job['id']}").json()["state"] == "succeeded"
        assert http.get("/api/duplicates").json()["exact"] == []
        assert len(sha256_tree(library)) == len(before) - 13

        undo = http.post("/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": job["id"]}})
        assert undo.status_code == 201, undo.text
        again = http.post(
            "/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": job["id"]}}
        )
        assert again.status_code == 200 and again.json()["id"] == undo.json()["id"]
        run_library_jobs(api.library)
        assert sha256_tree(library) == before
        assert {g["keeper"] for g in http.get("/api/duplicates").json()["exact"]} == keepers

        bad = http.post(
            "/api/jobs", json={"type": "dedupe_purge", "params": {"older_than_days": -1}}
        )
        assert bad.status_code == 422 and bad.json()["code"] == "invalid_params"
        not_dedupe = http.post(
            "/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": undo.json()["id"]}}
        )
        assert not_dedupe.status_code == 422
        assert not_dedupe.json()["code"] == "not_a_dedupe_job"
        nobody = "00000000-0000-4000-8000-000000000000"
        unknown = http.post("/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": nobody}})
        assert unknown.status_code == 404 and unknown.json()["code"] == "job_not_found"
        purge = http.post(
            "/api/jobs", json={"type": "dedupe_purge", "params": {"older_than_days": 30}}
        )
        assert purge.status_code == 201, purge.text
        run_library_jobs(api.library)
        assert http.get(f"/api/jobs/{purge.json()['id']}").json()["state"] == "succeeded"


def test_dedupe_moves_files_only_in_sources_inside_the_allowed_roots(db_url, tmp_path, library):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(elsewhere,)) as api,
        api.client() as http,
    ):
        refused = http.post("/api/jobs", json={"type": "dedupe", "params": {}})
        assert refused.status_code == 403, refused.text
        assert refused.json()["code"] == "path_not_allowed"
        assert str(library) in refused.json()["detail"]
    # A dedupe started elsewhere (the command line) cannot be undone through the API
    # while its sources lie outside the roots either.
    with running_server(db_url, tmp_path / "home") as api, api.client() as http:
        job = http.post("/api/jobs", json={"type": "dedupe", "params": {}}).json()
        run_library_jobs(api.library)
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(elsewhere,)) as api,
        api.client() as http,
    ):
        refused = http.post(
            "/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": job["id"]}}
        )
        assert refused.status_code == 403 and refused.json()["code"] == "path_not_allowed"
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(tmp_path,)) as api,
        api.client() as http,
    ):
        undo = http.post("/api/jobs", json={"type": "dedupe_undo", "params": {"job_id": job["id"]}})
        assert undo.status_code == 201, undo.text
