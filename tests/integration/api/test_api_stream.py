"""Live event streams over a real server: resumable with Last-Event-ID, every event
exactly once and in order, progress coalesced, per-job streams end at the end."""

from __future__ import annotations

import json

import pytest
from httpx_sse import connect_sse

from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.api_server import running_server


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home", embedded_workers=2) as server:
        yield server


def start(http, tmp_path, count: int, item_seconds: float = 0.0) -> dict:
    body = {
        "type": "test.record",
        "params": {
            "log": str(tmp_path / "run.log"),
            "items": [f"photo-{n:04d}" for n in range(count)],
            "item_seconds": item_seconds,
        },
    }
    answer = http.post("/api/jobs", json=body)
    assert answer.status_code == 201, answer.text
    return answer.json()


def read(
    http,
    url: str,
    *,
    last_event_id: str | None = None,
    stop_after: int | None = None,
    until=lambda messages: False,
):
    """Messages of one connection: all of it, or until ``stop_after`` messages or
    ``until(messages)``. Keep-alive comments are not messages."""
    headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
    messages = []
    with connect_sse(http, "GET", url, headers=headers) as source:
        assert source.response.headers["content-type"].startswith("text/event-stream")
        for sse in source.iter_sse():
            if not sse.data:
                continue
            message = json.loads(sse.data)
            assert sse.id == str(message["seq"])
            messages.append(message)
            if len(messages) == stop_after or until(messages):
                break
    return messages


def covered_seqs(messages: list[dict]) -> list[int]:
    return [seq for m in messages for seq in m.get("seqs", [m["seq"]])]


def test_a_client_that_reconnects_gets_every_event_once_in_order(api, tmp_path):
    with api.client() as http:
        job = start(http, tmp_path, 400, item_seconds=0.002)
        url = f"/api/jobs/{job['id']}/stream"
        received = []
        while True:
            last = str(received[-1]["seq"]) if received else None
            # Drop the connection after a few messages, as a flaky network would.
            chunk = read(http, url, last_event_id=last, stop_after=3)
            received += chunk
            if chunk[-1]["type"] == "state:succeeded":
                break
        assert received[-1]["type"] == "state:succeeded"
        # Once finished, resuming from the end gives an empty, ended stream.
        assert read(http, url, last_event_id=str(received[-1]["seq"])) == []
    stored = [e["seq"] for e in api.library.service.events(job["id"])]
    assert covered_seqs(received) == stored
    final = received[-2] if received[-2]["type"] == "progress" else None
    progress = [m for m in received if m["type"] == "progress" and "progress" in m]
    assert progress, "progress messages carry the job's counts"
    assert max(m["progress"]["done"] for m in progress) == 400
    assert final is None or final["progress"]["done"] <= 400


def test_progress_runs_are_coalesced(api, tmp_path):
    with api.client() as http:
        job = start(http, tmp_path, 300)
        messages = read(http, f"/api/jobs/{job['id']}/stream")
    stored = api.library.service.events(job["id"])
    assert covered_seqs(messages) == [e["seq"] for e in stored]
    item_events = [e for e in stored if e["type"] == "items"]
    progress = [m for m in messages if m["type"] == "progress"]
    assert len(progress) < len(item_events)
    # Merged counts add up to what the item events said.
    merged = sum(m["data"].get("succeeded", 0) for m in progress)
    assert merged == sum(e["data"].get("succeeded", 0) for e in item_events) == 300


def test_global_stream_resumes_across_jobs(api, tmp_path):
    with api.client() as http:
        first = start(http, tmp_path, 50)
        second = start(http, tmp_path, 50)
        jobs = {first["id"], second["id"]}

        def both_finished(messages):
            return {m["job_id"] for m in messages if m["type"] == "state:succeeded"} == jobs

        head = read(http, "/api/events/stream", stop_after=2)
        rest = []
        while not both_finished(head + rest):
            last = str((rest or head)[-1]["seq"])
            seen = head + rest
            rest += read(
                http,
                "/api/events/stream",
                last_event_id=last,
                stop_after=5,
                until=lambda chunk, seen=seen: both_finished(seen + chunk),
            )
        after = read(http, f"/api/events/stream?after={head[0]['seq']}", stop_after=1)
    seqs = covered_seqs(head + rest)
    stored = sorted(
        e["seq"]
        for job in (first, second)
        for e in api.library.service.events(job["id"])
        if e["seq"] <= seqs[-1]
    )
    assert seqs == stored
    assert covered_seqs(after)[0] == seqs[1]


def test_a_bad_last_event_id_is_a_problem(api):
    with api.client() as http:
        answer = http.get("/api/events/stream", headers={"Last-Event-ID": "abc"})
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_last_event_id"
