"""Bearer-token authentication.

The API token comes from ``PHOTO_PIPELINE_TOKEN`` or is generated once into
``<home>/api-token`` (mode 0600). Browsers cannot put headers on ``EventSource`` or
``<img>`` requests, so those GET routes also accept ``?access_token=``: a token signed
with the API token that expires within two hours, never the API token itself.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from pathlib import Path

from fastapi import Request

from photo_pipeline.api.problems import ApiError

TOKEN_FILE = "api-token"
_QUERY_TOKEN_HOURS = 2


def load_or_create_token(home: Path, configured: str | None) -> str:
    """The configured token, else the one stored under ``home``, else a new one
    written there with owner-only permissions (concurrent first starts agree)."""
    if configured:
        return configured
    path = home / TOKEN_FILE
    home.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        token = path.read_text().strip()
        if not token:
            raise ApiError(500, "token_file_empty", f"{path} is empty; delete it") from None
        return token
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as out:
        out.write(token + "\n")
        out.flush()
        os.fsync(out.fileno())
    return token


def _signature(secret: str, expires: int) -> str:
    digest = hmac.new(secret.encode(), f"query:{expires}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).decode().rstrip("=")


def mint_query_token(secret: str, now: float | None = None) -> tuple[str, int]:
    """A query token and its expiry (Unix seconds). The expiry is rounded to the hour
    so that URLs made with it stay the same, and cacheable, for about an hour."""
    now = time.time() if now is None else now
    expires = (int(now) // 3600 + _QUERY_TOKEN_HOURS) * 3600
    return f"{expires}.{_signature(secret, expires)}", expires


def query_token_valid(secret: str, token: str, now: float | None = None) -> bool:
    expires_text, _, signature = token.partition(".")
    if not expires_text.isdigit():
        return False
    expires = int(expires_text)
    now = time.time() if now is None else now
    return now < expires and hmac.compare_digest(signature, _signature(secret, expires))


class TokenAuth:
    """FastAPI dependencies checking the bearer token (and, where allowed, a query
    token) in constant time."""

    def __init__(self, token: str) -> None:
        self.token = token

    def _bearer_ok(self, request: Request) -> bool:
        scheme, _, credentials = request.headers.get("authorization", "").partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(
            credentials.strip().encode(), self.token.encode()
        )

    async def header(self, request: Request) -> None:
        if not self._bearer_ok(request):
            raise _unauthorized()

    async def header_or_query(self, request: Request) -> None:
        query = request.query_params.get("access_token")
        if query is not None and query_token_valid(self.token, query):
            return
        if not self._bearer_ok(request):
            raise _unauthorized()


def _unauthorized() -> ApiError:
    return ApiError(
        401, "unauthorized", "a valid bearer token is required (Authorization: Bearer …)"
    )
