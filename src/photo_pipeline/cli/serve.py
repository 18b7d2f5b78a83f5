"""``photo-pipeline serve``: the HTTP API and web UI, with an embedded worker."""

from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket
import sys
from typing import Annotated

import typer

from photo_pipeline.cli.common import app, err_console, library
from photo_pipeline.cli.shown import shown
from photo_pipeline.cli.worker import MemoryBudgetOption
from photo_pipeline.errors import PhotoPipelineError

DEFAULT_PORT = 8765  # the Makefile's PORT too


class PortInUse(PhotoPipelineError):
    code = "port_in_use"
    status = 409


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a name that may resolve anywhere: treat it as exposed


def _next_free_port(host: str, port: int) -> int | None:
    for candidate in range(port + 1, min(port + 100, 65535) + 1):
        try:
            with _bound(host, candidate):
                return candidate
        except OSError:
            continue
    return None


def _bound(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # SO_REUSEADDR (as uvicorn sets it): a server stopped a moment ago does not hold
    # the port, one still listening does.
    return socket.create_server((host, port), family=family)


def bind_port(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the library is opened or anything is said:
    a busy port is refused with the one-line fix, and the socket goes to uvicorn as it
    is (no gap in which another process could take the port)."""
    try:
        return _bound(host, port)
    except OSError as exc:
        if exc.errno != errno.EADDRINUSE:
            raise PhotoPipelineError("cannot_bind", f"{host}:{port}: {exc.strerror}") from exc
        free = _next_free_port(host, port) if port else None
        other = str(free) if free is not None else "ANOTHER"
        raise PortInUse(
            detail=f"port {port} on {host} is in use (another photo-pipeline serve?): run "
            f"`make run PORT={other}` or `photo-pipeline serve --port {other}`",
        ) from exc


def _server_class() -> type:
    import uvicorn

    class ServerOnBoundSocket(uvicorn.Server):
        """uvicorn's server on the socket ``serve`` bound; it says when it listens, as
        uvicorn does for a port it binds itself (and readiness checks wait for)."""

        def __init__(self, config: uvicorn.Config, host: str, port: int) -> None:
            super().__init__(config)
            self._where = f"http://{host}:{port}"

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if not self.should_exit:
                logging.getLogger("uvicorn.error").info(
                    "Uvicorn running on %s (Press CTRL+C to quit)", self._where
                )

    return ServerOnBoundSocket


@app.command()
def serve(
    host: Annotated[
        str,
        typer.Option(
            help="Interface to bind; anything but loopback (e.g. 0.0.0.0) exposes the API "
            "to the network and needs a token of at least 128 bits."
        ),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535)] = DEFAULT_PORT,
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
    check_port: Annotated[
        bool,
        typer.Option(
            "--check-port",
            help="Only check that the port is free, and exit (0 free, 2 in use): "
            "`make run` asks before it queues its import.",
        ),
    ] = False,
    watch: Annotated[
        bool,
        typer.Option(
            "--watch/--no-watch",
            help="Watch the watched sources (`import --watch`) nobody else watches.",
        ),
    ] = True,
) -> None:
    """Serve the HTTP API (OpenAPI at /docs) and the web UI."""
    from photo_pipeline.api import create_app
    from photo_pipeline.api.auth import (
        TOKEN_FILE,
        check_token_strength,
        load_or_create_token,
    )
    from photo_pipeline.api.server import ConnectionLimits, uvicorn_config

    listening = bind_port(host, port)
    if check_port:
        listening.close()
        return
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
    port = listening.getsockname()[1]  # --port 0: the one the system chose
    err_console.print(f"photo-pipeline on http://{shown(host)}:{port}/", highlight=False)
    if sys.stderr.isatty() and not lib.settings.api_token:
        # On the user's own terminal, the token to sign in with (never into logs).
        token = load_or_create_token(lib.settings.home, None)
        err_console.print(
            f"sign in with the API token {token}  (kept in {shown(where)})", highlight=False
        )
    else:
        err_console.print(f"the API token is in {shown(where)}", highlight=False)
    config = uvicorn_config(application, host, port, limits)
    _server_class()(config, shown(host), port).run(sockets=[listening])
