"""The API listings bench.scale times: each library opened behind the app (FastAPI
TestClient, the real routes), its deep cursors walked to, every call's median per size."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from bench._scale_turns import in_turns

TOKEN = "bench-token-" + "x" * 40


def api_client(url: str, home: Path):
    from fastapi.testclient import TestClient

    from photo_pipeline.api import create_app
    from photo_pipeline.config import Settings
    from photo_pipeline.pipeline.library import open_library

    settings = replace(
        Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)}), database_url=url, api_token=TOKEN
    )
    lib = open_library(settings)
    client = TestClient(create_app(lib))
    client.headers["Authorization"] = f"Bearer {TOKEN}"
    return client, lib


def api_requests(client) -> dict[str, tuple[str, dict]]:
    """The calls to time in one library (its deep cursors walked to)."""

    def get(path: str, **params) -> dict:
        answer = client.get(path, params=params)
        assert answer.status_code == 200, (path, params, answer.text[:300])
        return answer.json()

    cursor = None
    for _ in range(50):
        cursor = get("/api/assets", **({"cursor": cursor} if cursor else {}))["next_cursor"]
    # Pages of 50 groups: the smallest library holds a few pages of them.
    near_cursor = None
    for _ in range(2):
        page = get(
            "/api/duplicates",
            kind="near",
            limit=50,
            **({"cursor": near_cursor} if near_cursor else {}),
        )
        near_cursor = page["near_next_cursor"] or near_cursor
    return {
        "/api/assets first page": ("/api/assets", {}),
        "/api/assets page 51": ("/api/assets", {"cursor": cursor}),
        "/api/assets camera=canon": ("/api/assets", {"camera": "canon"}),
        "/api/assets place=paris": ("/api/assets", {"place": "paris"}),
        "/api/assets one month": (
            "/api/assets",
            {"taken_from": "2020-06-01", "taken_to": "2020-06-30"},
        ),
        "/api/assets has_gps=true": ("/api/assets", {"has_gps": "true"}),
        "/api/assets has_gps=false": ("/api/assets", {"has_gps": "false"}),
        "/api/assets duplicates=exact": ("/api/assets", {"duplicates": "exact"}),
        "/api/assets duplicates=near": ("/api/assets", {"duplicates": "near"}),
        "/api/assets/{id}": ("/api/assets/1", {}),
        "/api/duplicates?kind=near": ("/api/duplicates", {"kind": "near", "limit": 50}),
        "/api/duplicates near page 3": (
            "/api/duplicates",
            {"cursor": near_cursor, "limit": 50} if near_cursor else {"kind": "near"},
        ),
        "/api/duplicates?kind=exact": ("/api/duplicates", {"kind": "exact", "limit": 50}),
        "/api/duplicates (exact+near)": ("/api/duplicates", {"limit": 50}),
        "/api/jobs": ("/api/jobs", {}),
        "/api/jobs?type=verify": ("/api/jobs", {"type": "verify"}),
        "/api/jobs?state=failed": ("/api/jobs", {"state": "failed"}),
    }


def api_calls(urls: dict[int, str], homes: dict[int, Path], repeat: int):
    """Each listing's median per size, the sizes called in turns."""
    opened = {size: api_client(url, homes[size]) for size, url in urls.items()}
    requests = {size: api_requests(client) for size, (client, _) in opened.items()}

    def call(client, path: str, params: dict) -> Callable[[], object]:
        def get() -> object:
            answer = client.get(path, params=params)
            assert answer.status_code == 200, (path, params, answer.text[:300])
            return answer

        return get

    medians: dict[int, dict[str, float]] = {size: {} for size in urls}
    first = next(iter(urls))
    for name in requests[first]:
        timed = {
            size: call(opened[size][0], *requests[size][name]) for size in urls
        }  # fmt: skip
        for size, ms in in_turns(timed, repeat).items():
            medians[size][name] = ms
    for client, lib in opened.values():
        client.close()
        lib.close()
    return medians
