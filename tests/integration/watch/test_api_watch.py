"""The API's side of watched sources: an import with ``"watch": true`` watches its
folder, ``/api/health`` lists the live watchers (source, host, mode, lag), and a
``watch`` that is no boolean is refused with a problem, not a 500."""

from __future__ import annotations

import socket

from photo_pipeline.pipeline.ingest.sources import list_sources
from tests.support.api_server import running_server
from tests.support.cli_processes import wait_until
from tests.support.watching import running_watchers


def test_an_import_with_watch_is_watched_and_health_lists_its_watcher(db_url, tmp_path):
    folder = tmp_path / "phone"
    folder.mkdir()
    with running_server(db_url, tmp_path / "home") as server, server.client() as http:
        assert http.get("/api/health").json()["watchers"] == []
        created = http.post(
            "/api/jobs", json={"type": "import", "params": {"paths": [str(folder)], "watch": True}}
        )
        assert created.status_code == 201, created.text
        [source] = list_sources(server.library.service)
        assert source["watch"] is True and source["watcher"] is None
        with running_watchers(server.library) as watchers:
            wait_until(lambda: http.get("/api/health").json()["watchers"], "a watcher listed")
            [watcher] = http.get("/api/health").json()["watchers"]
            [listed] = list_sources(server.library.service)
        assert watcher["source_id"] == source["id"]
        assert watcher["path"] == str(folder.resolve())
        assert watcher["host"] == socket.gethostname()
        assert watcher["holder"] == watchers.holder
        assert watcher["mode"] == "inotify" and watcher["reason"] is None
        assert watcher["lag_seconds"] >= 0
        assert listed["watcher"]["mode"] == "inotify"
        # Stopped, the watcher gave its lease back.
        assert http.get("/api/health").json()["watchers"] == []


def test_a_watch_that_is_no_boolean_is_a_problem(db_url, tmp_path):
    folder = tmp_path / "phone"
    folder.mkdir()
    with running_server(db_url, tmp_path / "home") as server, server.client() as http:
        answer = http.post(
            "/api/jobs",
            json={"type": "import", "params": {"paths": [str(folder)], "watch": "sometimes"}},
        )
        assert answer.status_code == 422
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert list_sources(server.library.service) == []
