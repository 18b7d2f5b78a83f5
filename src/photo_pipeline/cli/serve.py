"""``photo-pipeline serve``: the HTTP API and web UI, with an embedded worker."""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from photo_pipeline.cli.common import app, err_console, library


@app.command()
def serve(
    host: Annotated[
        str, typer.Option(help="Interface to bind; 0.0.0.0 exposes the API to the network.")
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = 8765,
    workers_embedded: Annotated[
        int,
        typer.Option(
            "--workers-embedded",
            min=0,
            help="Items processed in parallel by the worker inside the server; 0: none "
            "(run `photo-pipeline worker` separately).",
        ),
    ] = os.cpu_count() or 1,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web UI."""
    import uvicorn

    from photo_pipeline.api import create_app
    from photo_pipeline.api.auth import TOKEN_FILE, load_or_create_token

    lib = library()
    application = create_app(lib, embedded_workers=workers_embedded)
    where = "PHOTO_PIPELINE_TOKEN" if lib.settings.api_token else lib.settings.home / TOKEN_FILE
    err_console.print(f"photo-pipeline on http://{host}:{port}/", highlight=False)
    if sys.stderr.isatty() and not lib.settings.api_token:
        # On the user's own terminal, the token to sign in with (never into logs).
        token = load_or_create_token(lib.settings.home, None)
        err_console.print(f"sign in with the API token {token}  (kept in {where})", highlight=False)
    else:
        err_console.print(f"the API token is in {where}", highlight=False)
    uvicorn.run(application, host=host, port=port, log_level="info", access_log=False)
