"""The web UI's security headers on every answer: the API's JSON, its errors, streams,
renditions and ``/docs`` (whose policy also allows ``data:`` images for Swagger UI's
icons). Answers that set their own headers (the UI's pages) keep them."""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from photo_pipeline.api.docs import DOCS_IMG_SRC
from photo_pipeline.web import SECURITY_HEADERS


def _encoded(headers: dict[str, str]) -> list[tuple[bytes, bytes]]:
    return [(name.encode(), value.encode()) for name, value in headers.items()]


_DEFAULT = _encoded(SECURITY_HEADERS)
_DOCS = _encoded(
    {
        **SECURITY_HEADERS,
        "content-security-policy": SECURITY_HEADERS["content-security-policy"].replace(
            "img-src 'self'", DOCS_IMG_SRC
        ),
    }
)


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        extra = (
            _DOCS if scope["path"] == "/docs" or scope["path"].startswith("/docs/") else _DEFAULT
        )

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {name.lower() for name, _ in headers}
                headers += [(name, value) for name, value in extra if name not in present]
                message = {**message, "headers": headers}
            await send(message)

        await self.app(scope, receive, send_with_headers)
