"""A real photo-pipeline HTTP server on 127.0.0.1 (uvicorn in a thread of the test
process), with an httpx client that sends the token."""

from __future__ import annotations

import socket
import sys
import threading
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

from photo_pipeline.api import create_app
from photo_pipeline.config import Settings
from photo_pipeline.pipeline.library import Library, open_library
from photo_pipeline.pipeline.uploads.settings import UploadSettings

TOKEN = "test-token-0123456789"


class ApiServer:
    def __init__(self, lib: Library, base_url: str, app: FastAPI | None = None) -> None:
        self.library = lib
        self.base_url = base_url
        self.app = app

    def client(self, token: str | None = TOKEN, **kwargs) -> httpx.Client:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        return httpx.Client(base_url=self.base_url, headers=headers, timeout=30, **kwargs)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def in_thread(server: uvicorn.Server) -> Iterator[None]:
    """Run ``server`` in a daemon thread of this process, from started to stopped."""
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server did not start")
            thread.join(0.01)
        yield
    finally:
        server.should_exit = True
        thread.join(30)
        if thread.is_alive():
            raise RuntimeError(f"the server did not stop within 30 s:\n{_stuck(server, thread)}")


def _stuck(server: uvicorn.Server, thread: threading.Thread) -> str:
    """What holds a server's stop: its open connections and tasks, and the stacks of
    its thread and of every other thread but this one (its executor's among them)."""
    names = {t.ident: t.name for t in threading.enumerate()}
    stacks = [
        f"--- thread {names.get(ident, ident)}{' (the server)' if ident == thread.ident else ''}\n"
        + "".join(traceback.format_stack(frame))
        for ident, frame in sys._current_frames().items()
        if ident != threading.get_ident()
    ]
    state = server.server_state
    return (
        f"open connections: {len(state.connections)}; "
        f"tasks: {[repr(task) for task in state.tasks]}\n" + "\n".join(stacks)
    )


@contextmanager
def running_server(
    db_url: str,
    home: Path,
    *,
    embedded_workers: int = 0,
    upload_settings: UploadSettings | None = None,
    **settings: object,
) -> Iterator[ApiServer]:
    base = Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)})
    lib = open_library(
        replace(base, database_url=db_url, api_token=TOKEN, retry_base_seconds=0, **settings)
    )
    app = create_app(lib, embedded_workers=embedded_workers, upload_settings=upload_settings)
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
    try:
        with in_thread(uvicorn.Server(config)):
            yield ApiServer(lib, f"http://127.0.0.1:{port}", app)
    finally:
        lib.close()
