"""The API's defences against hostile clients, against a real uvicorn server: clear
idempotency conflicts, security headers, local docs, query tokens bound to a path and
to their expiry, rate-limited failed auth, capped streams, and a 500 that is one line."""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Iterator
from html.parser import HTMLParser

import httpx
import pytest

from photo_pipeline.api.auth import sign_query_token
from photo_pipeline.api.server import ConnectionLimits
from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.serve_command_server import TOKEN, serving

BEARER = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def url(db_url, tmp_path) -> Iterator[str]:
    with serving(db_url, tmp_path / "home") as base_url:
        yield base_url


def client(base_url: str, **kwargs) -> httpx.Client:
    return httpx.Client(base_url=base_url, timeout=30, **kwargs)


def record(tmp_path, *items: str) -> dict:
    return {"type": "test.record", "params": {"log": str(tmp_path / "r.log"), "items": list(items)}}


def test_an_idempotency_key_of_another_request_is_a_conflict_naming_its_job(url, tmp_path):
    key = {"Idempotency-Key": "nightly-1"}
    with client(url, headers=BEARER) as http:
        first = http.post("/api/jobs", json=record(tmp_path, "a"), headers=key)
        replay = http.post("/api/jobs", json=record(tmp_path, "a"), headers=key)
        other_params = http.post("/api/jobs", json=record(tmp_path, "b"), headers=key)
        # Keys are per job type: the same key on another type is another request.
        other_type = http.post("/api/jobs", json={"type": "render"}, headers=key)
        other_type_replay = http.post("/api/jobs", json={"type": "render"}, headers=key)
        long_key = {"Idempotency-Key": "k" * 200}
        long_first = http.post("/api/jobs", json={"type": "render"}, headers=long_key)
        long_replay = http.post("/api/jobs", json={"type": "render"}, headers=long_key)
    assert first.status_code == 201
    job = first.json()
    assert (replay.status_code, replay.json()["id"]) == (200, job["id"])
    assert other_params.status_code == 409, other_params.text
    problem = other_params.json()
    assert problem["code"] == "idempotency_conflict"
    assert (problem["job_id"], problem["job_type"]) == (job["id"], "test.record")
    assert job["id"] in problem["detail"] and "new key" in problem["detail"]
    assert other_type.status_code == 201 and other_type.json()["type"] == "render"
    assert other_type_replay.status_code == 200
    assert other_type_replay.json()["id"] == other_type.json()["id"]
    assert long_first.status_code == 201, long_first.text
    assert (long_replay.status_code, long_replay.json()["id"]) == (200, long_first.json()["id"])


def test_a_method_a_path_does_not_take_gets_405_listing_the_ones_it_does(url):
    with client(url, headers=BEARER) as http:
        jobs = http.delete("/api/jobs")
        job = http.put("/api/jobs/00000000-0000-4000-8000-000000000000")
        page = http.post("/library")
    assert (jobs.status_code, jobs.headers["allow"]) == (405, "GET, POST")
    assert jobs.json()["code"] == "method_not_allowed"
    assert job.status_code == 405 and job.headers["allow"] == "GET"
    assert page.status_code == 405 and page.headers["allow"] == "GET"


def test_api_answers_and_docs_carry_the_ui_security_headers(url):
    with client(url) as http:
        answers = [
            http.get("/api/health"),
            http.get("/api/jobs"),  # 401
            http.get("/api/jobs", headers=BEARER),
            http.get("/openapi.json"),
            http.get("/docs"),
            http.get("/library"),  # a UI page, for comparison
        ]
    for answer in answers:
        headers = answer.headers
        assert "default-src 'none'" in headers["content-security-policy"], answer.url
        assert "frame-ancestors 'none'" in headers["content-security-policy"]
        assert headers["x-content-type-options"] == "nosniff"
        assert headers["referrer-policy"] == "no-referrer"
        assert headers["x-frame-options"] == "DENY"


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.inline_scripts = 0

    def handle_starttag(self, tag, attrs):
        found = dict(attrs)
        self.urls += [found[name] for name in ("src", "href") if found.get(name)]
        if tag == "script" and not found.get("src"):
            self.inline_scripts += 1


def test_docs_load_swagger_ui_from_this_server_only(url):
    with client(url) as http:
        page = http.get("/docs")
        links = _Links()
        links.feed(page.text)
        assets = {link: http.get(link) for link in links.urls}
        missing = http.get("/docs/assets/../../app.py")
        redoc = http.get("/redoc")
    assert page.status_code == 200 and "swagger-ui" in page.text
    assert links.inline_scripts == 0  # the page keeps script-src 'self'
    assert links.urls and all(
        link.startswith("/") and not link.startswith("//") for link in links.urls
    )
    for link, answer in assets.items():
        assert answer.status_code == 200 and len(answer.content) > 0, link
    bundle = next(a for link, a in assets.items() if link.endswith("swagger-ui-bundle.js"))
    assert "SwaggerUIBundle" in bundle.text
    assert "openapi.json" in next(a for link, a in assets.items() if link == "/docs/init.js").text
    assert missing.status_code == 404 and redoc.status_code == 404


def test_query_tokens_open_only_their_path_prefix(url):
    with client(url, headers=BEARER) as http:
        media_token = http.get("/api/access-token", params={"path": "/api/assets/"}).json()
        default_token = http.get("/api/access-token").json()["access_token"]
        bad_prefix = http.get("/api/access-token", params={"path": "/docs"})
    assert bad_prefix.status_code == 422
    with client(url) as anonymous:
        on_media = anonymous.get(
            "/api/assets/1/thumbnail", params={"access_token": media_token["access_token"]}
        )
        elsewhere = anonymous.get(
            "/api/jobs/00000000-0000-4000-8000-000000000000/stream",
            params={"access_token": media_token["access_token"]},
        )
        sibling = anonymous.get(
            "/api/assetsX/1/thumbnail", params={"access_token": media_token["access_token"]}
        )
        with anonymous.stream(
            "GET", "/api/events/stream", params={"access_token": default_token}
        ) as stream:
            default_opens_streams = stream.status_code
    assert on_media.status_code == 404 and on_media.json()["code"] == "rendition_not_found"
    assert elsewhere.status_code == 401 and sibling.status_code == 401
    assert default_opens_streams == 200


def test_a_stream_opened_with_a_query_token_ends_when_the_token_expires(url):
    token = sign_query_token(TOKEN, int(time.time()) + 2, "/api/events/stream")
    with client(url) as anonymous:
        started = time.monotonic()
        with anonymous.stream(
            "GET", "/api/events/stream", params={"access_token": token}
        ) as stream:
            assert stream.status_code == 200
            for _ in stream.iter_bytes():  # returns once the server ends the stream
                assert time.monotonic() - started < 60, "the stream outlived its token"
        again = anonymous.get("/api/events/stream", params={"access_token": token})
    assert again.status_code == 401


def test_failed_authentication_is_rate_limited_per_client(db_url, tmp_path):
    # One attempt back per 1000 s: on a loaded machine the default of one a second
    # could hand one back mid-test, which "stays limited" would take for a fault.
    limits = ConnectionLimits(failed_auth_per_second=0.001)
    with serving(db_url, tmp_path / "home", limits) as url, client(url) as http:
        answers = [
            http.post(
                "/api/jobs", json={"type": "render"}, headers={"Authorization": f"Bearer guess-{n}"}
            )
            for n in range(40)
        ]
        right_token_meanwhile = http.get("/api/jobs", headers=BEARER)
        health = http.get("/api/health")
    codes = [a.status_code for a in answers]
    assert codes[0] == 401 and codes[-1] == 429, codes
    assert set(codes) == {401, 429} and codes.index(429) > 5
    assert codes[codes.index(429) :] == [429] * (len(codes) - codes.index(429))  # stays limited
    limited = answers[-1]
    assert limited.json()["code"] == "too_many_auth_failures"
    assert int(limited.headers["retry-after"]) >= 1
    # While limited, credentials are not even checked (no guessing at full speed).
    assert right_token_meanwhile.status_code == 429
    assert health.status_code == 200


def test_event_streams_per_client_are_capped(db_url, tmp_path):
    limits = ConnectionLimits(max_streams_per_client=2)
    with (
        serving(db_url, tmp_path / "home", limits) as base_url,
        client(base_url, headers=BEARER) as http,
    ):
        with (
            http.stream("GET", "/api/events/stream") as one,
            http.stream("GET", "/api/events/stream") as two,
        ):
            assert (one.status_code, two.status_code) == (200, 200)
            third = http.get("/api/events/stream")
            assert third.status_code == 429 and third.json()["code"] == "too_many_streams"
        # Both ended: their slots are free again (the server notices the disconnect).
        deadline = time.monotonic() + 30
        while True:
            with (
                http.stream("GET", "/api/events/stream") as a,
                http.stream("GET", "/api/events/stream") as b,
            ):
                if (a.status_code, b.status_code) == (200, 200):
                    break
            assert time.monotonic() < deadline, "stream slots were never released"


def test_an_unexpected_error_is_a_500_problem_and_one_log_line(db_url, tmp_path, caplog):
    def add_broken_route(app):
        @app.get("/api/broken")
        def broken() -> None:
            raise RuntimeError("boom\nsecond line")

    caplog.set_level(logging.INFO)
    with (
        serving(db_url, tmp_path / "home", app_hook=add_broken_route) as base_url,
        client(base_url, headers=BEARER) as http,
    ):
        answers = [http.get("/api/broken") for _ in range(3)]
    for answer in answers:
        assert answer.status_code == 500
        assert answer.headers["content-type"] == "application/problem+json"
        assert answer.json()["code"] == "internal_error" and "boom" not in answer.text
    # Every error record but an event hub's: one left running by an earlier test in
    # this process (its schema dropped) may log meanwhile; that is not this request.
    errors = [
        r
        for r in caplog.records
        if r.levelno >= logging.ERROR and r.name != "photo_pipeline.api.hub"
    ]
    assert len(errors) == 3, [r.getMessage() for r in errors]
    for error in errors:
        message = error.getMessage()
        assert error.exc_info is None and "\n" not in message
        assert re.search(
            r"RuntimeError: 'boom\\nsecond line' at .*test_api_security\.py:\d+", message
        )


def test_connections_past_the_cap_get_503_until_some_close(db_url, tmp_path):
    limits = ConnectionLimits(max_connections=10, header_timeout=60)
    with serving(db_url, tmp_path / "home", limits) as base_url:
        port = int(base_url.rsplit(":", 1)[1])
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(10)]
        try:
            with client(base_url) as http:
                assert http.get("/api/health").status_code == 503
        finally:
            for sock in idle:
                sock.close()
        deadline = time.monotonic() + 30
        with client(base_url) as http:
            while http.get("/api/health").status_code != 200:
                assert time.monotonic() < deadline, "the server never noticed the closes"


def test_headers_still_incomplete_past_16_kib_are_refused(url):
    # h11 buffers at most 16 KiB of an unfinished request line and headers.
    port = int(url.rsplit(":", 1)[1])
    unfinished = b"GET /api/health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 40_000
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(unfinished)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    assert answer.startswith(b"HTTP/1.1 400"), answer[:200]


@pytest.mark.parametrize(
    "path",
    ["/static", "/jobs/", "/library/", "/docs/", "/api/jobs/", "/api/assets/", "/api/health/"],
)
def test_no_redirect_names_the_host_the_request_claims(url, path):
    # Starlette's slash redirects built their Location from the Host header: a
    # poisoned cache or a shared link then sent the browser to the attacker's site.
    with client(url, headers=BEARER) as http:
        answer = http.get(path, headers={"Host": "attacker.example"})
    assert "location" not in answer.headers, answer.headers["location"]
    # No slash redirects at all: a path is served as written or not found.
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "not_found"
