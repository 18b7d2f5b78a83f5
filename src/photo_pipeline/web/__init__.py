"""The web UI: a small single-page app (plain ES modules, HTML and CSS shipped as
package data, no build step) served by the API app on the same origin.

``mount(app)`` serves ``index.html`` at ``/`` and at the app's client-side routes, and
the files under ``/static/``, each with a strict Content-Security-Policy:
scripts and styles only from this origin, nothing inline, no framing.
"""

from __future__ import annotations

from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse, Response
from fastapi.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

STATIC = Path(__file__).parent / "static"

# Client-side routes (history API): a reload or a shared link lands on the app.
PAGES = (
    "/",
    "/jobs",
    "/jobs/{job_id}",
    "/library",
    "/albums",
    "/albums/{album_id}",
    "/people",
    "/people/{person_id}",
    "/places",
    "/duplicates",
    "/organize",
    "/schedules",
)

CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "media-src 'self'",  # videos and Live Photos play from /api/assets/{id}/original
        "connect-src 'self'",
        "font-src 'self'",
        "manifest-src 'self'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)
SECURITY_HEADERS = {
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    # Image URLs carry a short-lived query token: never send it elsewhere.
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cross-origin-opener-policy": "same-origin",
}


def mount(app: FastAPI) -> None:
    """Serve the web UI from ``app``: pages at :data:`PAGES`, files at ``/static/``.
    Only these answers get the UI's headers: ``/docs`` keeps its own needs."""

    def index() -> Response:
        # Revalidated on every load so that an upgraded package shows at once.
        return FileResponse(STATIC / "index.html", media_type="text/html", headers=_HEADERS)

    for path in PAGES:
        app.add_api_route(path, index, methods=["GET"], include_in_schema=False)
    app.mount("/static", _WithHeaders(StaticFiles(directory=STATIC)), name="static")


_HEADERS = {**SECURITY_HEADERS, "cache-control": "no-cache"}


class _WithHeaders:
    """Static files have no version in their names: revalidate (ETag) on each use;
    and they get the security headers too."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.headers = [(k.encode(), v.encode()) for k, v in _HEADERS.items()]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *self.headers]
            await send(message)

        await self.app(scope, receive, send_with_headers)
