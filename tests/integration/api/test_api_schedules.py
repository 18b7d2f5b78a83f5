"""``/api/schedules`` over a real HTTP server: create, list, pause, resume, remove;
problem answers for a bad cron expression, interval, zone, job type or param."""

from __future__ import annotations

import pytest

from tests.support.api_server import running_server


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def test_create_list_pause_resume_and_remove(api):
    with api.client() as http:
        created = http.post(
            "/api/schedules",
            json={
                "job_type": "verify",
                "cron": "0 4 * * 0",
                "time_zone": "Europe/Paris",
                "params": {"sample": "25"},
            },
        )
        assert created.status_code == 201, created.text
        schedule = created.json()
        assert schedule["params"] == {"sample": 25} and schedule["cron"] == "0 4 * * 0"
        assert schedule["next_run"] and schedule["last_job"] is None
        every = http.post("/api/schedules", json={"job_type": "rescan", "every": "6h"}).json()
        assert every["every"] == "6h" and every["every_seconds"] == 21600

        listed = http.get("/api/schedules").json()
        assert [s["id"] for s in listed["schedules"]] == [schedule["id"], every["id"]]
        assert {"rescan", "verify"} <= {t["job_type"] for t in listed["job_types"]}

        for _ in range(2):  # pausing twice answers as once
            paused = http.post(f"/api/schedules/{schedule['id']}/pause")
            assert paused.status_code == 200 and paused.json()["paused"] is True
            assert paused.json()["next_run"] is None
        resumed = http.post(f"/api/schedules/{schedule['id']}/resume").json()
        assert resumed["paused"] is False and resumed["next_run"]

        assert http.delete(f"/api/schedules/{schedule['id']}").status_code == 204
        again = http.delete(f"/api/schedules/{schedule['id']}")
        assert again.status_code == 404 and again.json()["code"] == "schedule_not_found"
        assert [s["id"] for s in http.get("/api/schedules").json()["schedules"]] == [every["id"]]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"job_type": "verify", "cron": "0 3 * *"}, "invalid_cron"),
        ({"job_type": "verify", "cron": "0 0 31 2 *"}, "invalid_cron"),
        ({"job_type": "verify", "every": "6 hours"}, "invalid_interval"),
        ({"job_type": "verify", "every": "10s"}, "invalid_interval"),
        ({"job_type": "verify", "cron": "0 3 * * *", "every": "6h"}, "invalid_schedule"),
        ({"job_type": "verify"}, "invalid_schedule"),
        (
            {"job_type": "verify", "cron": "0 3 * * *", "time_zone": "Mars/Olympus"},
            "invalid_time_zone",
        ),
        ({"job_type": "organize", "every": "1d"}, "unknown_job_type"),
        ({"job_type": "no such type!", "every": "1d"}, "invalid_job_type"),
        ({"job_type": "verify", "every": "1d", "params": {"sample": 0}}, "invalid_sample"),
        ({"job_type": "verify", "every": "1d", "params": {"sample": "all"}}, "invalid_sample"),
        ({"job_type": "verify", "every": "1d", "params": {"dest": "/"}}, "invalid_params"),
        ({"job_type": "rescan", "every": "1d", "params": {"x": 1}}, "invalid_params"),
        ({"job_type": "rescan", "every": "1d", "surprise": 1}, "invalid_request"),
    ],
)
def test_a_bad_schedule_is_a_422_problem(api, body, code):
    with api.client() as http:
        answer = http.post("/api/schedules", json=body)
        assert answer.status_code == 422, answer.text
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == code
        assert http.get("/api/schedules").json()["schedules"] == []


def test_unknown_ids_are_404_and_the_routes_need_the_token(api):
    with api.client() as http:
        for method, path in [
            ("GET", "/api/schedules/7"),
            ("POST", "/api/schedules/7/pause"),
            ("POST", "/api/schedules/7/resume"),
            ("DELETE", "/api/schedules/7"),
        ]:
            answer = http.request(method, path)
            assert answer.status_code == 404 and answer.json()["code"] == "schedule_not_found"
        assert http.get("/api/schedules/99999999999999999999").status_code == 422
    with api.client(token=None) as anonymous:
        assert anonymous.get("/api/schedules").status_code == 401


def test_verify_takes_a_sample_through_the_jobs_api(api):
    with api.client() as http:
        refused = http.post("/api/jobs", json={"type": "verify", "params": {"sample": 0}})
        assert refused.status_code == 422 and refused.json()["code"] == "invalid_params"
        started = http.post("/api/jobs", json={"type": "verify", "params": {"sample": 25}})
        assert started.status_code == 201, started.text
        assert started.json()["params"] == {"sample": 25}


def test_a_create_repeated_with_its_key_returns_the_schedule_it_made(api):
    from concurrent.futures import ThreadPoolExecutor

    body = {"job_type": "rescan", "cron": "0 3 * * *", "time_zone": "UTC"}

    def post(_: int):
        with api.client() as http:
            return http.post("/api/schedules", json=body, headers={"Idempotency-Key": "phone-1"})

    with ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(post, range(12)))
    assert sorted(a.status_code for a in answers) == [200] * 11 + [201]
    assert len({a.json()["id"] for a in answers}) == 1
    with api.client() as http:
        other = http.post(
            "/api/schedules",
            json={**body, "cron": "0 4 * * *"},
            headers={"Idempotency-Key": "phone-1"},
        )
        assert other.status_code == 409 and other.json()["code"] == "idempotency_conflict"
        assert len(http.get("/api/schedules").json()["schedules"]) == 1
