"""A real photo-pipeline server on 127.0.0.1 as ``serve`` runs it (this project's
uvicorn protocol and connection limits), in a thread of the test process."""

from __future__ import annotations

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
from tests.support.api_server import TOKEN, free_port, in_thread

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
    port = free_port()
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, limits, log_level="warning"))
    try:
        with in_thread(server):
            yield f"http://127.0.0.1:{port}"
    finally:
        lib.close()
