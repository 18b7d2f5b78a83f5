"""The people API over a real server, on both databases: people listed, named (409 on
a name taken, 422 on a bad one), merged, faces moved; a person's photos by
``/api/assets?person=`` and by ``/api/search``; the face crops; problem+json for what
names nothing."""

from __future__ import annotations

import shutil

import pytest
from PIL import Image

from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.support.face_photos import OBAMA


@pytest.fixture
def api(db_url, tmp_path, face_images):
    from tests.support.api_server import running_server

    folder = tmp_path / "photos"
    folder.mkdir()
    for name in [*OBAMA, "biden.jpg", "t1.jpg"]:
        shutil.copy(face_images / name, folder / name)
    with running_server(db_url, tmp_path / "home", faces="on", preview_size=1280) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings)
        config = WorkerConfig(burst=True, concurrency=2)
        assert Worker(lib.service, lib.workers, registry, config).run() == 0
        yield server


def problem_of(answer, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == code, answer.json()


def test_people_are_named_found_merged_and_shown(api):
    with api.client() as http:
        people = http.get("/api/people").json()
        [obama] = [p for p in people if p["faces"] == 5]
        assert obama["name"] is None and obama["assets"] == 5

        named = http.patch(f"/api/people/{obama['id']}", json={"name": "Barack Obama"})
        assert named.status_code == 200 and named.json()["name"] == "Barack Obama"
        # The sidecars' MWG regions follow: a writer is queued before the answer.
        jobs = api.library.service.list_jobs(limit=500)
        assert any(job["job_type"] == "xmp_write" for job in jobs)
        listed = http.get("/api/assets", params={"person": obama["id"]}).json()["assets"]
        assert sorted(a["name"] for a in listed) == sorted(OBAMA)
        found = http.get("/api/search", params={"q": "obama"}).json()["assets"]
        assert sorted(a["name"] for a in found) == sorted(OBAMA)

        detail = http.get(f"/api/people/{obama['id']}").json()
        assert len(detail["faces"]) == 5
        crop = http.get(f"/api/faces/{obama['cover_face_id']}/crop")
        assert crop.status_code == 200 and crop.headers["content-type"] == "image/jpeg"
        with Image.open(__import__("io").BytesIO(crop.content)) as image:
            assert max(image.size) <= 160

        # Biden alone is no person yet: his face moves to a new one, named, then merged.
        biden_asset = next(
            a for a in http.get("/api/assets").json()["assets"] if a["name"] == "biden.jpg"
        )
        faces = http.get(f"/api/assets/{biden_asset['id']}/faces").json()
        assert (
            faces["scanned"] and len(faces["faces"]) == 1 and faces["faces"][0]["person_id"] is None
        )
        moved = http.post("/api/faces/move", json={"faces": [faces["faces"][0]["id"]]}).json()
        biden = moved["person_id"]
        problem_of(
            http.patch(f"/api/people/{biden}", json={"name": "barack obama"}), 409, "person_exists"
        )
        problem_of(
            http.patch(f"/api/people/{biden}", json={"name": " "}), 422, "invalid_person_name"
        )
        merged = http.post(f"/api/people/{obama['id']}/merge", json={"people": [biden]}).json()
        assert merged["faces"] == 6 and merged["name"] == "Barack Obama"
        problem_of(http.get(f"/api/people/{biden}"), 404, "person_not_found")
        problem_of(http.get("/api/faces/999999/crop"), 404, "face_not_found")
        problem_of(http.post("/api/faces/release", json={"faces": [999999]}), 404, "face_not_found")
        problem_of(http.get("/api/assets", params={"person": 999999}), 404, "person_not_found")

        queued = http.post("/api/jobs", json={"type": "faces", "params": {}})
        assert queued.status_code == 201, queued.text
