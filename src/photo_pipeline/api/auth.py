"""Bearer-token authentication.

The API token comes from ``PHOTO_PIPELINE_TOKEN`` or is generated once into
``<home>/api-token`` (mode 0600). Browsers cannot put headers on ``EventSource`` or
``<img>`` requests, so those GET routes also accept ``?access_token=``: a token signed
with the API token, bound to a path prefix, that expires within two hours, never the API
token itself.

``AuthenticateFirst`` checks credentials from the request line and headers alone, before
anything reads the body, and rate-limits failures per client address.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import math
import os
import re
import secrets
import time
from pathlib import Path

from fastapi import Request
from starlette.datastructures import Headers, QueryParams
from starlette.types import ASGIApp, Receive, Scope, Send

from photo_pipeline.api.problems import ApiError, problem
from photo_pipeline.api.ratelimit import FailedAuthLimiter
from photo_pipeline.errors import PhotoPipelineError

TOKEN_FILE = "api-token"
_QUERY_TOKEN_HOURS = 2
MIN_ENTROPY_BITS = 128
# Query tokens: "<expiry>.<path prefix, base64url>.<HMAC-SHA256, base64url>", ASCII only.
_QUERY_TOKEN = re.compile(r"([0-9]{1,12})\.([A-Za-z0-9_-]{0,400})\.([A-Za-z0-9_-]{43})", re.ASCII)
# Prefixes a query token may be bound to: API paths in plain ASCII.
QUERY_PREFIX_PATTERN = r"^/api/[A-Za-z0-9._~/-]{0,200}$"
DEFAULT_QUERY_PREFIX = "/api/"


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


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _signature(secret: str, expires: int, prefix: str) -> bytes:
    message = f"query:{expires}:{prefix}".encode()
    return _b64(hmac.new(secret.encode(), message, hashlib.sha256).digest()).encode()


def mint_query_token(
    secret: str, prefix: str = DEFAULT_QUERY_PREFIX, now: float | None = None
) -> tuple[str, int]:
    """A query token for paths under ``prefix`` and its expiry (Unix seconds). The
    expiry is rounded to the hour so that URLs made with it stay the same, and
    cacheable, for about an hour."""
    now = time.time() if now is None else now
    expires = (int(now) // 3600 + _QUERY_TOKEN_HOURS) * 3600
    return sign_query_token(secret, expires, prefix), expires


def sign_query_token(secret: str, expires: int, prefix: str) -> str:
    """The query token for paths under ``prefix`` that expires at ``expires``."""
    signature = _signature(secret, expires, prefix).decode()
    return f"{expires}.{_b64(prefix.encode())}.{signature}"


def query_token_expiry(secret: str, token: str, path: str, now: float | None = None) -> int | None:
    """The expiry of ``token`` if it is genuine, unexpired and bound to a prefix of
    ``path``; else None. Anything that is not the token's exact ASCII form is refused
    before any arithmetic or comparison."""
    match = _QUERY_TOKEN.fullmatch(token)
    if match is None:
        return None
    expires_text, prefix_b64, signature = match.groups()
    try:
        prefix = base64.urlsafe_b64decode(prefix_b64 + "=" * (-len(prefix_b64) % 4)).decode()
    except (binascii.Error, ValueError):
        return None
    expires = int(expires_text)
    now = time.time() if now is None else now
    if not (now < expires and _under(path, prefix)):
        return None
    if not hmac.compare_digest(signature.encode(), _signature(secret, expires, prefix)):
        return None
    return expires


def _under(path: str, prefix: str) -> bool:
    if not prefix.startswith("/") or {".", ".."} & set(path.split("/")):
        return False  # a dot segment could climb out of the prefix wherever it is resolved
    return path == prefix.rstrip("/") or path.startswith(prefix.rstrip("/") + "/")


def entropy_bits(token: str) -> float:
    """A conservative estimate of a token's entropy: the characters that could not be
    predicted from the ones before them, times the bits per character of the smaller of
    the usual alphabets that spell it and the characters it actually uses (so ``aaaa…``
    is worth nothing). A character is predicted when it continues a run of constant step
    (``aaa``, ``0123``, ``fedc``) or ends a 3-character stretch seen earlier in the token
    (``deadbeefdeadbeef``). A generated token (32 random bytes, base64url) scores about
    200 (never below 180 in 5,000 draws); ``0123456789abcdef`` twice 24; ``hunter2``
    about 20."""
    alphabets = [(r"[0-9]", 10), (r"[a-z]", 26), (r"[A-Z]", 26), (r"[-_]", 2)]
    size = sum(n for pattern, n in alphabets if re.search(pattern, token))
    if re.search(r"[^0-9a-zA-Z_-]", token):
        size += 33  # other printable ASCII and beyond: generous
    size = min(size, len(set(token)))
    return _unpredictable(token) * math.log2(size) if size > 1 else 0.0


def _unpredictable(token: str) -> int:
    """How many characters of ``token`` neither continue a constant-step run nor end a
    stretch of 3 characters that occurred earlier."""
    count = 0
    for i, char in enumerate(token):
        run = i >= 2 and ord(char) - ord(token[i - 1]) == ord(token[i - 1]) - ord(token[i - 2])
        repeat = i >= 3 and token[i - 2 : i + 1] in token[: i - 1]
        count += not (run or repeat)
    return count


class WeakToken(PhotoPipelineError):
    """The API token is too guessable to serve beyond loopback (``weak_api_token``)."""

    code = "weak_api_token"
    status = 500


def check_token_strength(token: str, where: str, host: str) -> None:
    """Refuse (``WeakToken``) to expose the API on ``host`` with a token worth fewer
    than :data:`MIN_ENTROPY_BITS` (:func:`entropy_bits`); ``where`` names its source."""
    bits = entropy_bits(token)
    if bits >= MIN_ENTROPY_BITS:
        return
    raise WeakToken(
        "weak_api_token",
        f"refusing to serve on {host}: the API token ({where}) is guessable, worth about "
        f"{bits:.0f} bits where at least {MIN_ENTROPY_BITS} bits are needed (characters "
        "that repeat, run in sequence like 0123 or abcd, or few distinct characters count "
        "for little); unset PHOTO_PIPELINE_TOKEN to use a generated one, or set a long "
        "random one (python3 -c 'import secrets; print(secrets.token_urlsafe(32))')",
    )


def _bearer_ok(headers: Headers, token: str) -> bool:
    scheme, _, credentials = headers.get("authorization", "").partition(" ")
    return scheme.lower() == "bearer" and hmac.compare_digest(
        credentials.strip().encode(), token.encode()
    )


class TokenAuth:
    """FastAPI dependencies checking the bearer token (and, where allowed, a query
    token) in constant time."""

    def __init__(self, token: str) -> None:
        self.token = token

    def query_expiry(self, path: str, params: QueryParams) -> int | None:
        query = params.get("access_token")
        return None if query is None else query_token_expiry(self.token, query, path)

    async def header(self, request: Request) -> None:
        if not _bearer_ok(request.headers, self.token):
            raise _unauthorized()

    async def header_or_query(self, request: Request) -> None:
        if _bearer_ok(request.headers, self.token):
            return
        expires = self.query_expiry(request.url.path, request.query_params)
        if expires is None:
            raise _unauthorized()
        # A stream opened with a query token ends when the token does.
        request.state.access_expires = expires


def _unauthorized() -> ApiError:
    return ApiError(
        401, "unauthorized", "a valid bearer token is required (Authorization: Bearer …)"
    )


def needs_token(path: str) -> bool:
    return (path == "/api" or path.startswith("/api/")) and path != "/api/health"


class AuthenticateFirst:
    """Refuse unauthenticated ``/api`` requests from their request line and headers,
    before anything reads their body (so a stalled upload costs nothing), closing the
    connection. A client's failures are rate-limited: once its bucket is empty it gets
    429 without its credentials being checked. The routes' own dependencies still
    decide which credentials each route takes (query tokens only where they may)."""

    def __init__(self, app: ASGIApp, auth: TokenAuth, limiter: FailedAuthLimiter) -> None:
        self.app = app
        self.auth = auth
        self.limiter = limiter

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not needs_token(scope["path"]):
            await self.app(scope, receive, send)
            return
        client = scope["client"][0] if scope.get("client") else "unknown"
        retry_after = self.limiter.wait_seconds(client)
        if retry_after > 0:
            refusal = problem(
                429,
                "too_many_auth_failures",
                "too many requests with wrong credentials from this address; wait",
            )
            refusal.headers.update(
                {"Retry-After": str(math.ceil(retry_after)), "Connection": "close"}
            )
            await refusal(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if _bearer_ok(headers, self.auth.token) or (
            scope["method"] in ("GET", "HEAD")
            and self.auth.query_expiry(scope["path"], QueryParams(scope["query_string"]))
        ):
            await self.app(scope, receive, send)
            return
        self.limiter.failed(client)
        error = _unauthorized()
        refusal = problem(401, error.code, error.detail)
        refusal.headers.update({"WWW-Authenticate": "Bearer", "Connection": "close"})
        await refusal(scope, receive, send)
