"""Hostile input on every route and header, against a real server on SQLite and
PostgreSQL: whatever a client sends, the answer is never a 5xx, and every refusal is
a problem+json with a stable code.

Hypothesis draws, per request, a route from the published schema (every method it
takes, and some it does not), path and query values, headers and a JSON body from
strategies aimed at the parsers: non-ASCII digits, integers past 64 bits, dates at
the ends of the calendar, durations, query tokens, browse cursors, duplicate group
keys and text with control characters."""

from __future__ import annotations

import base64
import json
import os
import re
import string
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from photo_pipeline.api.auth import mint_query_token
from photo_pipeline.api.server import ConnectionLimits
from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.serve_command_server import TOKEN, serving

# Per backend; a few seconds each. Set PHOTO_PIPELINE_FUZZ_EXAMPLES to dig deeper.
EXAMPLES = int(os.environ.get("PHOTO_PIPELINE_FUZZ_EXAMPLES", "250"))

EDGES = [
    "²",
    "٣",
    "1e309",
    "-1",
    "0",
    "99999999999999999999999",
    str(2**63),
    str(2**64),
    str(-(2**63) - 1),
    "9999-12-31",
    "9999-12-31T23:59:59",
    "0001-01-01",
    "0000-00-00",
    "2024-02-30",
    "+99999999999999999999h",
    "-99999999999999999999d",
    "+999999999999d",
    "+1d1d",
    "exact:99999999999999999999999",
    "exact:²",
    "near:-1",
    "\x00",
    "a\x00b",
    "\u202e",
    "' OR 1=1 --",
    '"paris',
    "NEAR(a b",
    "pari*",
    "a:* & !b",
    "rating:>=4",
    "../../etc/passwd",
    "%00",
    "null",
    "[]",
    "",
    " ",
    "é",
    "🙂",
    "\ufeff",
]

text = st.text(st.characters(exclude_categories=("Cs",)), max_size=30)
numbers = st.integers(-(2**80), 2**80).map(str)
durations = st.from_regex(r"\A[+-]?([0-9]{1,25}[dhms]){1,4}\Z")
dates = st.one_of(
    st.dates().map(str),
    st.from_regex(r"\A[0-9٠-٩²]{4}-[0-9]{2}-[0-9]{2}\Z"),
    st.datetimes().map(lambda d: d.isoformat()),
)
groups = st.builds(
    lambda kind, number: f"{kind}:{number}",
    st.sampled_from(["exact", "near", "far", ""]),
    st.one_of(numbers, text),
)
query_tokens = st.builds(
    lambda expires, prefix, signature: f"{expires}.{prefix}.{signature}",
    st.one_of(numbers, text, st.just("²")),
    st.one_of(text, st.just(base64.urlsafe_b64encode(b"/api/").decode().rstrip("="))),
    st.one_of(text, st.text(string.ascii_letters + "-_", min_size=43, max_size=43)),
)
cursors = st.builds(
    lambda order, asset_id: (
        base64.urlsafe_b64encode(json.dumps([order, asset_id]).encode()).decode().rstrip("=")
    ),
    st.one_of(dates, st.none(), text, st.integers()),
    st.one_of(st.integers(-(2**80), 2**80), text, st.none(), st.floats(allow_nan=True)),
)
job_ids = st.sampled_from(
    ["00000000-0000-4000-8000-000000000000", "x", "A" * 36, "a\x00b", "²" * 36]
)
hostile = st.one_of(
    st.sampled_from(EDGES), text, numbers, durations, dates, groups, query_tokens, cursors
)

json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(-(2**70), 2**70),
        st.floats(allow_nan=False, allow_infinity=False),
        hostile,
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(hostile, inner, max_size=4)
    ),
    max_leaves=12,
)


def _job_body(kind: str) -> st.SearchStrategy[dict[str, Any]]:
    fields = {
        "import": ["paths"],
        "render": ["force"],
        "similar": ["max_distance"],
        "organize": ["dest", "template", "move"],
        "organize_undo": ["job_id"],
        "timeshift_undo": ["job_id"],
        "timeshift": ["camera", "asset_ids", "by", "set", "since", "until"],
        "verify": [],
        "places": [],
    }[kind]
    value = st.one_of(hostile, json_values, job_ids, st.just("/tmp"))
    return st.builds(
        lambda params: {"type": kind, "params": params},
        st.fixed_dictionaries({}, optional={name: value for name in fields}),
    )


job_bodies = st.sampled_from(
    [
        "import",
        "render",
        "similar",
        "organize",
        "organize_undo",
        "timeshift",
        "timeshift_undo",
        "verify",
        "places",
    ]
).flatmap(_job_body)
CURATION_ACTIONS = [
    "rate",
    "favorite",
    "unreject",
    "tag",
    "untag",
    "add_to_album",
    "remove_from_album",
]
bodies = st.one_of(
    job_bodies,
    st.fixed_dictionaries(
        {},
        optional={
            "group": st.one_of(groups, hostile),
            "keep": st.one_of(st.lists(hostile, max_size=3), hostile),
        },
    ),
    st.fixed_dictionaries(
        {},
        optional={
            "dest": st.one_of(hostile, st.just("/tmp")),
            "template": hostile,
            "limit": st.one_of(numbers, hostile),
        },
    ),
    # Curation (api/curation.py): batch actions, ratings, tags, albums.
    st.fixed_dictionaries(
        {},
        optional={
            "ids": st.one_of(
                st.lists(st.one_of(st.integers(-(2**70), 2**70), hostile), max_size=4), hostile
            ),
            "action": st.one_of(st.sampled_from(CURATION_ACTIONS), hostile),
            "rating": st.one_of(st.integers(-10, 10), numbers, hostile),
            "tag": st.one_of(hostile, st.just("Places|France|Paris"), st.just("a||b")),
            "album": st.one_of(st.integers(-(2**70), 2**70), hostile),
            "name": hostile,
            "cover_asset_id": st.one_of(st.integers(-(2**70), 2**70), hostile),
        },
    ),
    json_values,
)


def _header_safe(value: str) -> bytes:
    # What an HTTP client can put on the wire at all
    # (no CR, LF, NUL or other controls, nor blanks at either end).
    return re.sub(r"[\x00-\x1f\x7f]", "", value).strip(" ").encode("utf-8")[:2000]


@st.composite
def requests(draw, operations: list[tuple[str, str, list[str]]], real_job: str):
    path, method, query_names = draw(st.sampled_from(operations))
    method = draw(st.sampled_from([method, method, method, "DELETE", "PUT", "PATCH"]))
    segment = st.one_of(hostile, job_ids, st.just(real_job), numbers)
    url = re.sub(r"\{[^}]+\}", lambda _: quote(draw(segment).encode("utf-8"), safe="") or "x", path)
    names = draw(st.lists(st.sampled_from([*query_names, "access_token", "x"]), max_size=4))
    params = [(name, draw(hostile)) for name in names]
    headers: dict[str, bytes] = {}
    auth = draw(st.sampled_from(["bearer"] * 6 + ["none", "hostile", "query"]))
    if auth == "bearer":
        headers["Authorization"] = f"Bearer {TOKEN}".encode()
    elif auth == "hostile":
        headers["Authorization"] = _header_safe("Bearer " + draw(hostile))
    elif auth == "query":
        params.append(("access_token", draw(query_tokens)))
    for name in ("Last-Event-ID", "Idempotency-Key", "If-None-Match", "Content-Type"):
        if draw(st.booleans()):
            headers[name] = _header_safe(draw(hostile))
    body = draw(bodies) if method in ("POST", "PUT", "PATCH") else None
    return method, url, params, headers, body


def _operations(spec: dict) -> list[tuple[str, str, list[str]]]:
    found = []
    for path, methods in spec["paths"].items():
        for method, operation in methods.items():
            names = [p["name"] for p in operation.get("parameters", []) if p["in"] == "query"]
            found.append((path, method.upper(), names))
    return [*found, ("/docs/assets/{name}", "GET", []), ("/api/nope/{x}", "GET", [])]


def _check(answer: httpx.Response, what: str) -> None:
    assert answer.status_code < 500, f"{what} -> {answer.status_code} {answer.text[:500]}"
    if answer.status_code >= 400:
        assert answer.headers["content-type"] == "application/problem+json", what
        if answer.request.method == "HEAD":
            return  # a HEAD's problem has its headers only
        problem = answer.json()
        assert isinstance(problem["code"], str) and problem["code"], what
        assert problem["status"] == answer.status_code, what


@pytest.mark.timeout(60 + EXAMPLES // 5)
def test_hostile_requests_never_get_a_5xx(db_url, tmp_path):
    # A generous failed-auth budget, or most requests would be answered by the limiter.
    limits = ConnectionLimits(failed_auth_burst=100_000, max_streams_per_client=1000)
    with (
        serving(db_url, tmp_path / "home", limits) as base_url,
        httpx.Client(base_url=base_url, timeout=30) as http,
    ):
        bearer = {"Authorization": f"Bearer {TOKEN}"}
        job = http.post(
            "/api/jobs",
            json={
                "type": "test.record",
                "params": {"log": str(tmp_path / "r.log"), "items": ["a"]},
            },
            headers=bearer,
        ).json()["id"]
        operations = _operations(http.get("/openapi.json").json())
        assert len(operations) > 15  # the schema was read, not an empty one

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        )
        @given(requests(operations, job))
        def hostile_request_gets_a_problem_or_an_answer(request) -> None:
            method, url, params, headers, body = request
            what = f"{method} {url} params={params!r} headers={headers!r} body={body!r}"
            with http.stream(method, url, params=params, headers=headers, json=body) as answer:
                if answer.headers.get("content-type", "").startswith("text/event-stream"):
                    assert answer.status_code == 200, what
                    return  # a live stream: the answer is its status; closing ends it
                answer.read()
            _check(answer, what)

        hostile_request_gets_a_problem_or_an_answer()
        # Known cases from the attack run, each checked on its own.
        for url, params, headers in [
            ("/api/events/stream", {"access_token": "².x"}, {}),
            ("/api/events/stream", {"access_token": "9" * 40 + ".x.y"}, {}),
            ("/api/events/stream", {}, {**bearer, "Last-Event-ID": "²".encode("latin-1")}),
            ("/api/assets", {"cursor": _cursor_past_64_bits()}, bearer),
            ("/api/assets", {"taken_to": "9999-12-31"}, bearer),
            ("/api/assets", {"sort": "taken", "cursor": _cursor_past_64_bits()}, bearer),
            ("/api/jobs", {"type": "a\x00b"}, bearer),
            ("/api/search", {"q": '"'}, bearer),
            ("/api/search", {"q": 'NEAR(paris -berlin* "unbalanced'}, bearer),
            ("/api/search", {"q": "'; DROP TABLE assets; --"}, bearer),
            ("/api/search", {"q": "favorite"}, bearer),
            ("/api/search", {"q": "2019-02-30 31 june 2019"}, bearer),
            ("/api/search", {"q": "paris", "cursor": _cursor_past_64_bits()}, bearer),
        ]:
            answer = http.get(url, params=params, headers=headers)
            assert answer.status_code in (200, 401, 422), (url, answer.text)
            _check(answer, url)
        for body in [
            {"type": "timeshift", "params": {"camera": "x", "by": "+99999999999999999999h"}},
            {"type": "timeshift", "params": {"camera": "x", "by": "+1h", "until": "9999-12-31"}},
            {"type": "timeshift_undo", "params": {"job_id": "a\x00b"}},
            {"type": "timeshift", "params": {"asset_ids": [1], "set": "9999-12-31T23:59"}},
            {"type": "timeshift", "params": {"asset_ids": [1], "set": "2019-02-30"}},
            {"type": "timeshift", "params": {"asset_ids": [2**62], "set": "2019-06-14"}},
        ]:
            answer = http.post("/api/jobs", json=body, headers=bearer)
            assert 400 <= answer.status_code < 500, answer.text
            _check(answer, str(body))
        for method, url, body in [
            ("POST", "/api/curation", {"ids": [1], "action": "rate", "rating": 9}),
            ("POST", "/api/curation", {"ids": [2**62], "action": "favorite"}),
            ("POST", "/api/curation", {"ids": [1], "action": "tag", "tag": "a||b"}),
            ("POST", "/api/curation", {"ids": [1], "action": "tag", "tag": "ß" * 400}),
            ("POST", "/api/curation", {"ids": [], "action": "reject"}),
            ("PUT", "/api/assets/1/rating", {"rating": -1}),
            ("POST", "/api/albums", {"name": " \u200b "}),
            ("PATCH", "/api/albums/99", {"name": "x"}),
            ("GET", "/api/assets?rating=%3E9", None),
            ("GET", "/api/assets?tag=%7C", None),
            ("GET", "/api/assets?album=99", None),
        ]:
            answer = http.request(method, url, json=body, headers=bearer)
            assert 400 <= answer.status_code < 500, (url, body, answer.text)
            _check(answer, f"{method} {url} {body}")
        group = {"group": "exact:99999999999999999999999", "keep": ["a"]}
        answer = http.post("/api/duplicates/decisions", json=group, headers=bearer)
        assert answer.status_code == 422 and answer.json()["code"] == "invalid_request"
        # A genuine query token still works: the fuzzing broke nothing.
        token, _ = mint_query_token(TOKEN)
        with http.stream("GET", "/api/events/stream", params={"access_token": token}) as ok:
            assert ok.status_code == 200


def _cursor_past_64_bits() -> str:
    raw = json.dumps(["2024-01-01T00:00:00+00:00", 10**30]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")
