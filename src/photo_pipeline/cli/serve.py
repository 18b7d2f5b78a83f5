"""``photo-pipeline serve``: the HTTP API and web UI, with an embedded worker."""

from __future__ import annotations

import ipaddress
import os
import sys
from typing import Annotated

import typer

from photo_pipeline.cli.common import app, err_console, library
from photo_pipeline.cli.shown import shown
from photo_pipeline.cli.worker import MemoryBudgetOption


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere: treat it as exposed


@app.command()
def serve(
    host: Annotated[
        str,
        typer.Option(
            help="Interface to bind; anything but loopback (e.g. 0.0.0.0) exposes the API "
            "to the network and needs a token of at least 128 bits."
        ),
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
    memory_budget: MemoryBudgetOption = None,
    header_timeout: Annotated[
        float,
        typer.Option(min=0.01, help="Seconds for a request's line and headers to arrive."),
    ] = 10.0,
    body_timeout: Annotated[
        float, typer.Option(min=0.01, help="Seconds a request body may pause.")
    ] = 30.0,
    keep_alive_timeout: Annotated[
        float, typer.Option(min=0.01, help="Seconds an idle keep-alive connection stays open.")
    ] = 5.0,
    max_connections: Annotated[
        int, typer.Option(min=1, help="Open connections (and requests in flight); past it, 503.")
    ] = 200,
    max_streams_per_client: Annotated[
        int, typer.Option(min=1, help="Event streams one client address may hold open.")
    ] = 16,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch/--no-watch",
            help="Watch the watched sources (`import --watch`) nobody else watches.",
        ),
    ] = True,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web UI."""
    import uvicorn

    from photo_pipeline.api import create_app
    from photo_pipeline.api.auth import (
        TOKEN_FILE,
        check_token_strength,
        load_or_create_token,
    )
    from photo_pipeline.api.server import ConnectionLimits, uvicorn_config

    lib = library()
    if lib.settings.allowed_roots:
        from photo_pipeline.pipeline.ingest.sources import sources_outside

        for path in sources_outside(lib.service, lib.settings.allowed_roots):
            err_console.print(
                f"warning: the source {shown(path)} lies outside PHOTO_PIPELINE_ALLOWED_ROOTS: "
                "API dedupe and organize are refused while it is registered (`photo-pipeline "
                "sources` lists it; `sources --remove ID` forgets it)",
                highlight=False,
            )
    where = "PHOTO_PIPELINE_TOKEN" if lib.settings.api_token else lib.settings.home / TOKEN_FILE
    if not _is_loopback(host):
        token = load_or_create_token(lib.settings.home, lib.settings.api_token)
        check_token_strength(token, str(where), host)
        err_console.print(
            f"warning: serving on {shown(host)}, reachable from other machines: anyone with "
            "the token controls the library, and plain HTTP shows it to the network (put TLS "
            "in front)",
            highlight=False,
        )
    limits = ConnectionLimits(
        header_timeout=header_timeout,
        body_timeout=body_timeout,
        keep_alive_timeout=keep_alive_timeout,
        max_connections=max_connections,
        max_streams_per_client=max_streams_per_client,
    )
    application = create_app(
        lib,
        embedded_workers=workers_embedded,
        memory_budget=memory_budget,
        limits=limits,
        watch=watch,
    )
    err_console.print(f"photo-pipeline on http://{shown(host)}:{port}/", highlight=False)
    if sys.stderr.isatty() and not lib.settings.api_token:
        # On the user's own terminal, the token to sign in with (never into logs).
        token = load_or_create_token(lib.settings.home, None)
        err_console.print(
            f"sign in with the API token {token}  (kept in {shown(where)})", highlight=False
        )
    else:
        err_console.print(f"the API token is in {shown(where)}", highlight=False)
    uvicorn.Server(uvicorn_config(application, host, port, limits)).run()
