"""``/api/sources`` over a real server, on both databases: the registered folders with
their file counts and watch state, and watching one or not (idempotent), with
problem+json for an unknown source or a bad body."""

from __future__ import annotations

from photo_pipeline.pipeline.ingest.sources import list_sources
from tests.integration.api.test_api_curation import problem_of
from tests.integration.api.test_api_library import import_sample
from tests.support.api_server import running_server


def test_a_source_is_watched_and_unwatched_over_http(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as api:
        import_sample(api, tmp_path / "photos")
        with api.client() as http:
            [source] = http.get("/api/sources").json()
            assert source["path"] == str(tmp_path / "photos")
            assert source["files"] > 0 and source["watch"] is False
            assert source["watcher"] is None

            for _ in range(2):  # idempotent
                answer = http.put(f"/api/sources/{source['id']}/watch", json={"watch": True})
                assert answer.status_code == 200, answer.text
                assert answer.json()["watch"] is True
            assert http.get("/api/sources").json()[0]["watch"] is True
            assert list_sources(api.library.service)[0]["watch"] is True

            off = http.put(f"/api/sources/{source['id']}/watch", json={"watch": False})
            assert off.json()["watch"] is False

            problem_of(
                http.put("/api/sources/999999/watch", json={"watch": True}), 404, "source_not_found"
            )
            problem_of(
                http.put(f"/api/sources/{source['id']}/watch", json={"watch": "yes please"}),
                422,
                "invalid_request",
            )
            problem_of(
                http.put(f"/api/sources/{source['id']}/watch", json={"watch": True, "x": 1}),
                422,
                "invalid_request",
            )
        with api.client(token=None) as anonymous:
            refused = anonymous.put(f"/api/sources/{source['id']}/watch", json={"watch": True})
        assert refused.status_code == 401
        assert list_sources(api.library.service)[0]["watch"] is False
