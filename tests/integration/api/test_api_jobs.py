"""The jobs API over a real HTTP server: create (idempotent, locked), list, inspect,
cancel, retry, items and events; authentication; problem answers."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.api_server import running_server


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def record_request(tmp_path, items=("a", "b"), **params):
    return {
        "type": "test.record",
        "params": {"log": str(tmp_path / "run.log"), "items": list(items), **params},
    }


def test_create_then_get_a_job(api, tmp_path):
    with api.client() as http:
        created = http.post("/api/jobs", json=record_request(tmp_path))
        assert created.status_code == 201, created.text
        job = created.json()
        assert job["type"] == "test.record" and job["state"] == "queued"
        assert job["progress"] == {"total": 2, "done": 0, "by_state": {"queued": 2}}
        fetched = http.get(f"/api/jobs/{job['id']}")
        assert fetched.status_code == 200 and fetched.json()["id"] == job["id"]


def test_idempotency_key_replays_the_job_and_refuses_another_body(api, tmp_path):
    with api.client() as http:
        headers = {"Idempotency-Key": "upload-42"}
        first = http.post("/api/jobs", json=record_request(tmp_path), headers=headers)
        again = http.post("/api/jobs", json=record_request(tmp_path), headers=headers)
        other = http.post("/api/jobs", json=record_request(tmp_path, ["z"]), headers=headers)
    assert (first.status_code, again.status_code) == (201, 200)
    assert again.json()["id"] == first.json()["id"]
    assert other.status_code == 409
    assert other.headers["content-type"] == "application/problem+json"
    assert other.json()["code"] == "idempotency_conflict"


def test_concurrent_identical_posts_make_exactly_one_job(api, tmp_path):
    body = record_request(tmp_path)

    def post(_: int):
        with api.client() as http:
            return http.post("/api/jobs", json=body, headers={"Idempotency-Key": "same"})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, range(16)))
    assert sorted(a.status_code for a in answers) == [200] * 15 + [201]
    assert len({a.json()["id"] for a in answers}) == 1
    assert len(api.library.service.list_jobs()) == 1


def test_a_held_lock_is_refused_naming_the_blocking_job(api, tmp_path):
    with api.client() as http:
        holder = http.post("/api/jobs", json=record_request(tmp_path, lock="library")).json()
        refused = http.post("/api/jobs", json=record_request(tmp_path, lock="library"))
    assert refused.status_code == 409
    problem = refused.json()
    assert problem["code"] == "lock_held"
    assert problem["blocking_jobs"] == [holder["id"]]
    assert holder["id"] in problem["detail"]


def test_list_filters_and_pages_with_a_cursor(api, tmp_path):
    with api.client() as http:
        ids = [http.post("/api/jobs", json=record_request(tmp_path)).json()["id"] for _ in range(5)]
        http.post(f"/api/jobs/{ids[0]}/cancel")
        first = http.get("/api/jobs", params={"limit": 2}).json()
        second = http.get("/api/jobs", params={"limit": 2, "cursor": first["next_cursor"]}).json()
        third = http.get("/api/jobs", params={"limit": 2, "cursor": second["next_cursor"]}).json()
        cancelled = http.get("/api/jobs", params={"state": "cancelled"}).json()
        by_type = http.get("/api/jobs", params={"type": "scan"}).json()
    paged = [j["id"] for page in (first, second, third) for j in page["jobs"]]
    newest = api.library.service.events(ids[0])[-1]["seq"]  # the cancel came last
    assert first["last_event_seq"] == newest
    assert paged == ids[::-1]
    assert third["next_cursor"] is None
    assert [j["id"] for j in cancelled["jobs"]] == [ids[0]]
    assert by_type["jobs"] == []


def test_cancel_retry_items_and_events(api, tmp_path):
    service = api.library.service
    with api.client() as http:
        job = http.post("/api/jobs", json=record_request(tmp_path, ["good", "bad-1"])).json()
        claimed = service.claim(["test.record"], "w1")
        token = claimed["fencing_token"]
        service.set_items(
            job["id"], [("good", "running"), ("bad-1", "running")], fencing_token=token
        )
        service.set_items(
            job["id"],
            [("good", "succeeded"), ("bad-1", "failed", ("corrupt_file", "not a photo"))],
            fencing_token=claimed["fencing_token"],
        )
        service.transition(
            job["id"],
            "failed",
            fencing_token=claimed["fencing_token"],
            error=("items_failed", "1 item failed"),
            retry=False,
        )
        failed = http.get(f"/api/jobs/{job['id']}/items", params={"state": "failed"}).json()
        assert [(i["key"], i["error_code"]) for i in failed["items"]] == [("bad-1", "corrupt_file")]
        events = http.get(f"/api/jobs/{job['id']}/events").json()
        assert events[0]["type"] == "queued"
        later = http.get(f"/api/jobs/{job['id']}/events", params={"after": events[1]["seq"]})
        assert [e["seq"] for e in later.json()] == [e["seq"] for e in events[2:]]
        retried = http.post(f"/api/jobs/{job['id']}/retry")
        assert retried.status_code == 200, retried.text
        assert retried.json()["state"] == "retry_queued"
        again = http.post(f"/api/jobs/{job['id']}/retry")
        assert again.status_code == 409 and again.json()["code"] == "invalid_transition"
        cancelled = http.post(f"/api/jobs/{job['id']}/cancel")
        assert cancelled.json()["state"] == "cancelled"


ROUTES = [
    ("GET", "/api/jobs"),
    ("POST", "/api/jobs"),
    ("GET", "/api/jobs/x"),
    ("POST", "/api/jobs/x/cancel"),
    ("POST", "/api/jobs/x/retry"),
    ("GET", "/api/jobs/x/items"),
    ("GET", "/api/jobs/x/events"),
    ("GET", "/api/jobs/x/stream"),
    ("GET", "/api/events/stream"),
    ("GET", "/api/access-token"),
]


@pytest.mark.parametrize("token", [None, "wrong-token", ""])
def test_every_api_route_needs_the_token(api, token):
    with api.client(token=token) as http:
        for method, path in ROUTES:
            answer = http.request(method, path, json={"type": "x"})
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.json()["code"] == "unauthorized"
            assert answer.headers["www-authenticate"] == "Bearer"
        assert http.get("/api/health").json()["status"] == "ok"


def test_a_query_token_opens_streams_but_not_the_rest(api):
    with api.client() as http:
        token = http.get("/api/access-token").json()["access_token"]
    with api.client(token=None) as anonymous:
        assert anonymous.get("/api/jobs", params={"access_token": token}).status_code == 401
        assert anonymous.get("/api/access-token", params={"access_token": token}).status_code == 401
        forged = token.split(".")[0] + ".AAAA"
        stream = anonymous.get("/api/jobs/nope/stream", params={"access_token": forged})
        assert stream.status_code == 401
        unknown = anonymous.get("/api/jobs/nope/stream", params={"access_token": token})
        assert unknown.status_code == 404 and unknown.json()["code"] == "job_not_found"


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"type": "no.such.type"}, 422, "unknown_job_type"),
        ({"type": "test.record", "params": {"items": []}}, 422, "invalid_params"),
        ({"type": "test.record", "params": {"log": "relative/log"}}, 422, "invalid_path"),
        ({"type": "test.record", "params": {"log": "/x\u0000y"}}, 422, "invalid_path"),
        ({"params": {}}, 422, "invalid_request"),
        ({"type": "test.record", "extra": 1}, 422, "invalid_request"),
    ],
)
def test_bad_requests_get_a_problem_with_a_stable_code(api, body, status, code):
    with api.client() as http:
        answer = http.post("/api/jobs", json=body)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == code
    assert "Traceback" not in answer.text


def test_malformed_json_and_oversized_bodies_are_refused(api):
    with api.client() as http:
        broken = http.post(
            "/api/jobs", content=b"{not json", headers={"content-type": "application/json"}
        )
        huge = http.post(
            "/api/jobs", content=b"x" * (2 << 20), headers={"content-type": "application/json"}
        )
        unknown_job = http.get("/api/jobs/../../etc/passwd")
        missing = http.get("/api/jobs/00000000-0000-0000-0000-000000000000")
    assert broken.status_code == 422 and broken.json()["code"] == "invalid_request"
    assert huge.status_code == 413 and huge.json()["code"] == "request_too_large"
    assert unknown_job.status_code == 404
    assert missing.status_code == 404 and missing.json()["code"] == "job_not_found"


def test_paths_outside_the_allowed_roots_are_refused(db_url, tmp_path):
    allowed = tmp_path / "photos"
    allowed.mkdir()
    roots = (allowed.resolve(),)
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=roots) as api,
        api.client() as http,
    ):
        inside = http.post(
            "/api/jobs",
            json={"type": "test.record", "params": {"log": str(allowed / "run.log")}},
        )
        escape = str(allowed / ".." / "elsewhere.log")
        outside = http.post("/api/jobs", json={"type": "test.record", "params": {"log": escape}})
        (allowed / "link").symlink_to(tmp_path)
        via_link = http.post(
            "/api/jobs",
            json={"type": "test.record", "params": {"log": str(allowed / "link" / "x.log")}},
        )
    assert inside.status_code == 201
    assert outside.status_code == 403 and outside.json()["code"] == "path_not_allowed"
    assert via_link.status_code == 403
