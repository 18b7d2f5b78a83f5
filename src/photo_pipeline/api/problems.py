"""Every error answer is ``application/problem+json`` (RFC 9457) with a stable ``code``,
the same codes the CLI prints. Clients never see a stack trace."""

from __future__ import annotations

import logging
import re
import traceback
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException
from starlette.routing import Match, compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from photo_pipeline.db.text import storable
from photo_pipeline.errors import PhotoPipelineError

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"

# Codes for errors raised by the framework itself (routing, methods, auth).
_HTTP_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    406: "not_acceptable",
    408: "request_timeout",
    413: "request_too_large",
    415: "unsupported_media_type",
    429: "too_many_requests",
}


class Problem(BaseModel):
    """An error: ``code`` is stable and machine-readable, ``detail`` is for people."""

    model_config = ConfigDict(extra="allow")

    type: str = "about:blank"
    title: str
    status: int
    code: str
    detail: str = ""


class ApiError(PhotoPipelineError):
    """An error raised by a route: carries its own HTTP status."""

    def __init__(self, status: int, code: str, detail: str = "", **extra: object) -> None:
        super().__init__(code, detail, **extra)
        self.status = status


def problem(status: int, code: str, detail: str = "", **extra: Any) -> JSONResponse:
    body = Problem(
        title=HTTPStatus(status).phrase, status=status, code=code, detail=detail, **extra
    )
    return JSONResponse(_encodable(body.model_dump()), status_code=status, media_type=PROBLEM_JSON)


def _encodable(value: Any) -> Any:
    """``value`` with every string encodable as UTF-8 (``db.text.storable``: a lone
    surrogate, from a JSON ``"\\udc80"`` or a file name that is not UTF-8, written as
    an escape). A detail that echoes a client's input must never fail the answer."""
    if isinstance(value, str):
        return storable(value)
    if isinstance(value, dict):
        return {_encodable(key): _encodable(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_encodable(item) for item in value]
    return value


def install(app: FastAPI) -> None:
    """Map every exception to a problem answer."""

    @app.exception_handler(PhotoPipelineError)
    async def domain_error(_: Request, exc: PhotoPipelineError) -> JSONResponse:
        response = problem(exc.status, exc.code, exc.detail, **exc.extra)
        if exc.status == 401:
            response.headers["WWW-Authenticate"] = "Bearer"
        return response

    @app.exception_handler(RequestValidationError)
    async def invalid_request(_: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"loc": list(e.get("loc", ())), "msg": e.get("msg", ""), "type": e.get("type", "")}
            for e in exc.errors()
        ]
        first = errors[0] if errors else {"loc": [], "msg": "invalid request"}
        where = ".".join(str(part) for part in first["loc"])
        return problem(422, "invalid_request", f"{where}: {first['msg']}", errors=errors)

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> JSONResponse:
        code = _HTTP_CODES.get(exc.status_code, "http_error")
        response = problem(exc.status_code, code, str(exc.detail or ""))
        if exc.headers:
            response.headers.update(exc.headers)
        if exc.status_code == 405:
            # Starlette names only the first route of the path; list every method.
            response.headers["Allow"] = ", ".join(_allowed_methods(app, request))
        return response


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    """Every method some route of the request's path takes: the published schema's
    operations (routers are nested, so walk the schema, not the route tree) and the
    plain routes (pages, docs) at the top level."""
    methods: set[str] = set()
    for pattern, operations in _schema_paths(app):
        if pattern.fullmatch(request.url.path):
            methods |= operations
    for route in app.router.routes:
        match, _ = route.matches(request.scope)  # PARTIAL: the path matches, not the method
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


def _schema_paths(app: FastAPI) -> list[tuple[re.Pattern[str], set[str]]]:
    compiled = getattr(app.state, "allow_patterns", None)
    if compiled is None:
        compiled = [
            (compile_path(path)[0], {method.upper() for method in operations})
            for path, operations in app.openapi()["paths"].items()
        ]
        app.state.allow_patterns = compiled
    return compiled


class InternalErrors:
    """The last resort: an exception no handler took becomes a 500 problem and one
    log line naming it and where it was raised (no traceback per request: a client
    that can cause one could otherwise fill the log). A 500 is always a bug."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception as exc:
            frames = traceback.extract_tb(exc.__traceback__)
            where = f" at {frames[-1].filename}:{frames[-1].lineno}" if frames else ""
            log.error(
                "internal error on %s %.200r: %s: %.300r%s",
                scope["method"],
                scope["path"],
                type(exc).__name__,
                str(exc),
                where,
            )
            if not started:
                answer = problem(500, "internal_error", "the server failed; see its log")
                await answer(scope, receive, send)


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_JSON: {}}}
    for status in (400, 401, 403, 404, 408, 409, 413, 422, 429)
}
