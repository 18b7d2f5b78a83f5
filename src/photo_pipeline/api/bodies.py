"""Request bodies are small and come promptly: bigger ones are refused with 413, and a
body that stops arriving is refused with 408 and its connection closed."""

from __future__ import annotations

import asyncio

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from photo_pipeline.api import problems

MAX_BODY_BYTES = 1 << 20  # job requests are small; anything bigger is a mistake or abuse


class BodyLimits:
    """Refuse request bodies over ``limit`` bytes with 413, whether announced by
    Content-Length or streamed, and bodies whose next part takes longer than
    ``read_timeout`` seconds with 408. Paths under ``own_limits`` (uploads) check
    their bodies' sizes themselves: only the deadline applies to them."""

    def __init__(
        self, app: ASGIApp, limit: int, read_timeout: float, own_limits: tuple[str, ...] = ()
    ) -> None:
        self.app = app
        self.limit = limit
        self.read_timeout = read_timeout
        self.own_limits = own_limits

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit
        if scope["path"].startswith(self.own_limits):
            limit = 1 << 62  # checked by the route
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and (
            not declared.isdigit() or len(declared) > 20 or int(declared) > limit
        ):
            detail = f"request bodies are limited to {self.limit} bytes"
            answer = problems.problem(413, "request_too_large", detail)
            answer.headers["Connection"] = "close"
            await answer(scope, receive, send)
            return
        seen = 0
        body_done = False

        async def limited() -> Message:
            nonlocal seen, body_done
            if body_done:
                # Only waits for the disconnect now (e.g. a stream's listener): no deadline.
                return await receive()
            try:
                # asyncio.timeout, not wait_for: in Python 3.11 wait_for drops a cancel
                # of this request that lands as the part arrives.
                async with asyncio.timeout(self.read_timeout):
                    message = await receive()
            except TimeoutError:
                # FastAPI re-raises HTTPException from body reading as is.
                raise HTTPException(
                    408,
                    f"the request body did not arrive within {self.read_timeout:g} s",
                    headers={"Connection": "close"},
                ) from None
            if message["type"] != "http.request" or not message.get("more_body", False):
                body_done = True
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > limit:
                    raise HTTPException(
                        413,
                        f"request bodies are limited to {self.limit} bytes",
                        headers={"Connection": "close"},
                    )
            return message

        await self.app(scope, limited, send)
