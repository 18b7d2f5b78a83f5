"""``Idempotency-Key`` on every photo job type: the same request again returns the
job it made, also after that job ran and changed what a new request would be judged
on (files organized, times shifted, duplicates quarantined); another request with
the key and type is refused (``idempotency_conflict``; keys are per job type).
Real server, real worker, both
databases."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.sample import write_sample
from tests.support.api_server import running_server
from tests.support.photo_jobs import run_library_jobs


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        write_sample(tmp_path / "photos", 6)
        lib = server.library
        import_folders(lib.service, lib.catalog, [tmp_path / "photos"], follow_up=lib.settings)
        run_library_jobs(server.library)
        yield server


def requests(tmp_path) -> dict[str, tuple[dict, dict | None]]:
    """Per job type: a request, and another of the same type."""
    dest = str(tmp_path / "organized")
    return {
        "render": ({}, {"force": True}),
        "similar": ({"max_distance": 6}, {"max_distance": 7}),
        "verify": ({}, None),
        "places": ({}, None),
        "organize": ({"dest": dest}, {"dest": dest, "move": True}),
        "timeshift": ({"camera": "EOS R5", "by": "+1h"}, {"camera": "EOS R5", "by": "+2h"}),
        "dedupe": ({}, {"near": True}),
        "dedupe_purge": ({"older_than_days": 30}, {"older_than_days": 31}),
    }


JOB_TYPES = ["render", "similar", "verify", "places", "organize", "timeshift", "dedupe",
             "dedupe_purge"]  # fmt: skip


@pytest.mark.parametrize("job_type", JOB_TYPES)
def test_a_replay_returns_the_job_after_it_ran_and_another_request_is_refused(
    api, tmp_path, job_type
):
    params, other = requests(tmp_path)[job_type]
    key = {"Idempotency-Key": f"replay-{job_type}"}
    with api.client() as http:
        first = http.post("/api/jobs", json={"type": job_type, "params": params}, headers=key)
        assert first.status_code == 201, first.text
        run_library_jobs(api.library)
        assert http.get(f"/api/jobs/{first.json()['id']}").json()["state"] == "succeeded"
        again = http.post("/api/jobs", json={"type": job_type, "params": params}, headers=key)
        assert (again.status_code, again.json()["id"]) == (200, first.json()["id"]), again.text
        if other is not None:
            refused = http.post("/api/jobs", json={"type": job_type, "params": other}, headers=key)
            assert refused.status_code == 409, refused.text
            assert refused.json()["code"] == "idempotency_conflict"
