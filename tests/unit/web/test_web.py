"""The web UI's serving: pages and static files with a strict CSP, the API's own
pages untouched, and every static file shipped as package data."""

from __future__ import annotations

import asyncio
import re
import tomllib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from photo_pipeline import web

REPO = Path(__file__).resolve().parents[3]


class Client:
    """Requests straight into the ASGI app (no server, no thread)."""

    def __init__(self, app: FastAPI) -> None:
        self.app = app

    def get(self, path: str) -> httpx.Response:
        async def fetch() -> httpx.Response:
            transport = httpx.ASGITransport(app=self.app)
            async with httpx.AsyncClient(transport=transport, base_url="http://ui") as http:
                return await http.get(path)

        # A thread of its own: the caller's thread may already run an event loop.
        with ThreadPoolExecutor(1) as pool:
            return pool.submit(asyncio.run, fetch()).result()


@pytest.fixture
def client() -> Client:
    app = FastAPI()
    web.mount(app)
    return Client(app)


@pytest.mark.parametrize("path", ["/", "/jobs", "/jobs/abc", "/library", "/organize"])
def test_pages_are_the_app_with_a_strict_policy(client, path):
    answer = client.get(path)
    assert answer.status_code == 200
    assert '<script type="module" src="/static/js/main.js">' in answer.text
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "'unsafe-inline'" not in policy
    assert "frame-ancestors 'none'" in policy
    assert answer.headers["referrer-policy"] == "no-referrer"


def test_static_files_are_served_revalidated_and_unsniffed(client):
    answer = client.get("/static/js/main.js")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/javascript")
    assert answer.headers["x-content-type-options"] == "nosniff"
    assert answer.headers["cache-control"] == "no-cache"
    assert client.get("/static/nope.js").status_code == 404
    assert client.get("/static/../__init__.py").status_code == 404


def test_other_paths_are_not_the_app(client):
    assert client.get("/jobs/a/b").status_code == 404
    assert client.get("/docs").headers.get("content-security-policy") is None


def test_no_inline_script_or_style_in_the_page():
    html = (web.STATIC / "index.html").read_text()
    assert not re.search(r"<script(?![^>]*\bsrc=)", html)
    assert "<style" not in html and " style=" not in html


def test_every_static_file_is_package_data():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]["photo_pipeline"]
    package = web.STATIC.parent.parent
    shipped = {path for pattern in patterns for path in package.glob(pattern)}
    for path in web.STATIC.rglob("*"):
        if path.is_file():
            assert path in shipped, f"{path} is not in [tool.setuptools.package-data]"
