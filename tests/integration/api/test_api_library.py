"""The library API over a real server: assets with filters and cursor pages, one
asset, renditions with caching headers, duplicates and the decisions on them."""

from __future__ import annotations

import pytest

from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.sample import write_sample
from tests.support.api_server import running_server

PHOTOS = 12  # and 2 exact copies, 2 resized copies, 1 broken file


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def import_sample(api, folder) -> None:
    write_sample(folder, PHOTOS)
    lib = api.library
    import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings)
    worker = Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True, concurrency=2))
    assert worker.run() == 0


def all_pages(http, **params) -> list[dict]:
    found, cursor = [], None
    while True:
        page = http.get("/api/assets", params={**params, "cursor": cursor} if cursor else params)
        assert page.status_code == 200, page.text
        found += page.json()["assets"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return found


def test_assets_page_filter_and_open(api, tmp_path):
    import_sample(api, tmp_path / "photos")
    with api.client() as http:
        assets = all_pages(http, limit=5)
        assert len(assets) == PHOTOS + 2
        assert len({a["id"] for a in assets}) == len(assets)
        order = [(a["taken_utc"] or a["taken_local"]) for a in assets]
        assert order == sorted(order)
        canon = all_pages(http, camera="canon")
        assert canon and all(a["make"] == "Canon" for a in canon)
        with_gps = all_pages(http, has_gps="true")
        without = all_pages(http, has_gps="false")
        assert len(with_gps) + len(without) == len(assets)
        july = all_pages(http, taken_from="2023-07-01", taken_to="2023-07-31")
        assert july and all(a["taken_local"].startswith("2023-07") for a in july)
        exact = all_pages(http, duplicates="exact")
        assert [a["files"] for a in exact] == [2, 2]
        near = all_pages(http, duplicates="near")
        assert len(near) >= 4  # two originals and their resized copies

        one = http.get(f"/api/assets/{assets[0]['id']}").json()
        assert one["content_hash"] == assets[0]["content_hash"]
        assert one["taken_source"] == "exif_original" or one["taken_source"]
        assert {f["state"] for f in one["files"]} == {"present"}
        assert set(one["renditions"]) == {"thumbnail", "preview"}


def test_renditions_are_served_with_caching_headers(api, tmp_path):
    import_sample(api, tmp_path / "photos")
    with api.client() as http:
        asset = all_pages(http, limit=1)[0]
        url = asset["thumbnail_url"]
        first = http.get(url)
        assert first.status_code == 200
        assert first.headers["content-type"] == "image/jpeg"  # the default format
        assert "immutable" in first.headers["cache-control"]
        etag = first.headers["etag"]
        again = http.get(url, headers={"If-None-Match": etag})
        assert again.status_code == 304 and again.content == b""
        preview = http.get(asset["preview_url"])
        assert preview.status_code == 200 and len(preview.content) > len(first.content)
        token = http.get("/api/access-token").json()["access_token"]
    with api.client(token=None) as anonymous:
        assert anonymous.get(url).status_code == 401
        assert anonymous.get(url, params={"access_token": token}).status_code == 200
        # The query token opens images and streams, not the catalogue.
        assert anonymous.get("/api/assets", params={"access_token": token}).status_code == 401


def test_no_rendition_yet_is_a_404_problem(api, tmp_path):
    write_sample(tmp_path / "photos", 3)
    lib = api.library
    jobs = import_folders(lib.service, lib.catalog, [tmp_path / "photos"])  # scan only
    Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True)).run()
    assert [j["job_type"] for j in jobs] == ["scan"]
    with api.client() as http:
        asset = all_pages(http)[0]
        assert asset["thumbnail_url"] is None
        missing = http.get(f"/api/assets/{asset['id']}/thumbnail")
    assert missing.status_code == 404 and missing.json()["code"] == "rendition_not_found"


@pytest.mark.parametrize(
    ("path", "status"),
    [
        ("/api/assets/999999", 404),
        ("/api/assets/0", 422),
        ("/api/assets/-1", 422),
        ("/api/assets/1e3", 422),
        ("/api/assets/..%2f..%2fetc%2fpasswd", 404),
        ("/api/assets/1/thumbnail/../../../../etc/passwd", 404),
        ("/api/assets/1/raw", 422),
        ("/api/assets/999999/original", 404),
        ("/api/assets?cursor=not-a-cursor", 422),
        ("/api/assets?taken_from=2023-02-30", 422),
    ],
)
def test_bad_asset_requests_are_4xx_problems(api, path, status):
    with api.client() as http:
        answer = http.get(path)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"


def test_duplicates_and_decisions(api, tmp_path):
    import_sample(api, tmp_path / "photos")
    with api.client() as http:
        groups = http.get("/api/duplicates").json()
        assert len(groups["exact"]) == 2
        assert groups["near"], "the resized copies form near-duplicate groups"
        near = groups["near"][0]
        keeper = near["assets"][0]
        assert keeper["keep"] and keeper["asset_id"] == near["keeper"]
        for url in [groups["exact"][0]["thumbnail_url"], keeper["thumbnail_url"]]:
            assert http.get(url).headers["content-type"] == "image/jpeg"
        assert near["decision"] is None

        decided = http.post(
            "/api/duplicates/decisions",
            json={"group": near["group"], "keep": [str(keeper["asset_id"])]},
        )
        assert decided.status_code == 201, decided.text
        again = http.get("/api/duplicates").json()
        assert again["near"][0]["decision"]["keep"] == [str(keeper["asset_id"])]

        stranger = http.post(
            "/api/duplicates/decisions", json={"group": near["group"], "keep": ["123456"]}
        )
        assert stranger.status_code == 422 and stranger.json()["code"] == "invalid_keepers"
        unknown = http.post(
            "/api/duplicates/decisions", json={"group": "near:999999", "keep": ["1"]}
        )
        assert unknown.status_code == 404
        assert unknown.json()["code"] == "duplicate_group_not_found"


def test_import_through_the_api_chains_and_replays(api, tmp_path):
    write_sample(tmp_path / "photos", 4)
    body = {"type": "import", "params": {"paths": [str(tmp_path / "photos")]}}
    with api.client() as http:
        first = http.post("/api/jobs", json=body, headers={"Idempotency-Key": "nas-1"})
        again = http.post("/api/jobs", json=body, headers={"Idempotency-Key": "nas-1"})
        other = http.post(
            "/api/jobs",
            json={"type": "import", "params": {"paths": [str(tmp_path)]}},
            headers={"Idempotency-Key": "nas-1"},
        )
        missing = http.post(
            "/api/jobs", json={"type": "import", "params": {"paths": [str(tmp_path / "nope")]}}
        )
        similar = first.json()
        render = http.get(f"/api/jobs/{similar['prerequisites'][0]}").json()
        scan = http.get(f"/api/jobs/{render['prerequisites'][0]}").json()
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == similar["id"]
    assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
    assert missing.status_code == 422 and missing.json()["code"] == "not_a_folder"
    assert [j["type"] for j in (scan, render, similar)] == ["scan", "render", "similar"]
    assert len(api.library.service.list_jobs()) == 3


def test_organize_plan_start_and_the_library_lock(api, tmp_path):
    import_sample(api, tmp_path / "photos")
    dest = tmp_path / "organized"
    dest.mkdir()
    template = "{taken:%Y}/{taken:%m}/{original_name}.{ext}"
    with api.client() as http:
        plan = http.post(
            "/api/organize/plan", json={"dest": str(dest), "template": template, "limit": 3}
        )
        assert plan.status_code == 200, plan.text
        assert len(plan.json()["entries"]) == 3 and plan.json()["truncated"]
        bad = http.post(
            "/api/organize/plan", json={"dest": str(dest), "template": "../{original_name}"}
        )
        assert bad.status_code == 422 and bad.json()["code"]
        started = http.post(
            "/api/jobs",
            json={"type": "organize", "params": {"dest": str(dest), "template": template}},
        )
        assert started.status_code == 201, started.text
        blocked = http.post("/api/jobs", json={"type": "verify", "params": {}})
    assert blocked.status_code == 409
    assert blocked.json()["code"] == "lock_held"
    assert blocked.json()["blocking_jobs"] == [started.json()["id"]]
    assert list(dest.iterdir()) == []  # the plan touched nothing; no worker ran the job
