"""How ``photo-pipeline serve`` holds connections: deadlines for headers, bodies and
idle keep-alive, and caps on connections and streams, so that slow or idle clients
cannot hold the server's memory or sockets."""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from photo_pipeline.api.problems import PROBLEM_JSON, Problem


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout: float = 10.0
    """Seconds from a connection's start, or the end of its last answer, until the
    next request's line and headers are complete."""
    body_timeout: float = 30.0
    """Seconds a request body may pause between two parts."""
    keep_alive_timeout: float = 5.0
    """Seconds an idle keep-alive connection stays open."""
    max_connections: int = 200
    """Open connections and requests in flight; past it, 503."""
    max_streams_per_client: int = 16
    """Concurrent event streams per client address; past it, 429."""
    max_header_bytes: int = 16 * 1024
    failed_auth_burst: int = 20
    """Requests with wrong credentials one client address may make at once…"""
    failed_auth_per_second: float = 1.0
    """…and then per second; past it, 429."""


class _HeaderDeadline(H11Protocol):
    """uvicorn's HTTP/1.1 protocol with a deadline for the request line and headers:
    uvicorn times out only idle keep-alive connections, not a fresh connection that
    sends nothing, or headers a byte at a time."""

    header_timeout: float = ConnectionLimits.header_timeout
    _deadline: asyncio.TimerHandle | None = None

    # H11Protocol narrows asyncio.Protocol's BaseTransport to Transport (and ignores
    # [override] for it); this override keeps uvicorn's signature.
    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._request_in_progress():
            self._disarm()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def send_400_response(self, msg: str) -> None:
        """A request that is not HTTP is answered with a problem like every other
        error, instead of uvicorn's plain text."""
        body = Problem(
            title="Bad Request", status=400, code="bad_request", detail=msg
        ).model_dump_json()
        headers = [
            (b"content-type", PROBLEM_JSON.encode()),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        for event in (
            h11.Response(status_code=400, headers=headers, reason=b"Bad Request"),
            h11.Data(data=body.encode()),
            h11.EndOfMessage(),
        ):
            self.transport.write(self.conn.send(event) or b"")
        self.transport.close()

    def _request_in_progress(self) -> bool:
        return self.cycle is not None and not self.cycle.response_complete

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.header_timeout, self._deadline_passed)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self._request_in_progress() or self.transport.is_closing():
            return
        with contextlib.suppress(h11.LocalProtocolError):
            self.conn.send(h11.ConnectionClosed())
        self.transport.close()


def uvicorn_config(
    app: Any, host: str, port: int, limits: ConnectionLimits, log_level: str = "info"
) -> uvicorn.Config:
    class HeaderDeadlineProtocol(_HeaderDeadline):
        header_timeout = limits.header_timeout

    return uvicorn.Config(
        app,
        host=host,
        port=port,
        http=HeaderDeadlineProtocol,
        # uvicorn annotates an int but only hands it to loop.call_later, which takes a
        # float: its annotation is too narrow, and --keep-alive-timeout 0.5 works.
        timeout_keep_alive=limits.keep_alive_timeout,  # type: ignore[arg-type]
        limit_concurrency=limits.max_connections,
        h11_max_incomplete_event_size=limits.max_header_bytes,
        log_level=log_level,
        access_log=False,
    )
