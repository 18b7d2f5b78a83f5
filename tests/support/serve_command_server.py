"""A real photo-pipeline server on 127.0.0.1 as ``serve`` runs it (this project's
uvicorn protocol and connection limits), in a thread of the test process."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

import uvicorn
from fastapi import FastAPI

from photo_pipeline.api import create_app
from photo_pipeline.api.server import ConnectionLimits, uvicorn_config
from photo_pipeline.config import Settings
from photo_pipeline.pipeline.library import open_library
from tests.support.api_server import TOKEN

__all__ = ["TOKEN", "serving"]


@contextmanager
def serving(
    db_url: str,
    home: Path,
    limits: ConnectionLimits | None = None,
    app_hook: Callable[[FastAPI], None] | None = None,
) -> Iterator[str]:
    """The server's base URL while it runs; ``app_hook`` may add routes first."""
    limits = limits or ConnectionLimits()
    base = Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)})
    lib = open_library(replace(base, database_url=db_url, api_token=TOKEN))
    app = create_app(lib, limits=limits)
    if app_hook is not None:
        app_hook(app)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        while not server.started:
            if not thread.is_alive():
                raise RuntimeError("the server did not start")
            thread.join(0.01)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)
        lib.close()
