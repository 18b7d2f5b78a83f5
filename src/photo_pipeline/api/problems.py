"""Every error answer is ``application/problem+json`` (RFC 9457) with a stable ``code``,
the same codes the CLI prints. Clients never see a stack trace."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.exceptions import HTTPException
from starlette.routing import Match

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
    413: "request_too_large",
    415: "unsupported_media_type",
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
    return JSONResponse(body.model_dump(), status_code=status, media_type=PROBLEM_JSON)


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

    @app.exception_handler(Exception)
    async def internal_error(request: Request, exc: Exception) -> JSONResponse:
        log.exception("unhandled error on %s %s", request.method, request.url.path)
        return problem(500, "internal_error", "the server failed; see its log")


def _allowed_methods(app: FastAPI, request: Request) -> list[str]:
    methods: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(request.scope)  # PARTIAL: the path matches, not the method
        if match is not Match.NONE:
            methods |= getattr(route, "methods", None) or set()
    return sorted(methods)


PROBLEM_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": Problem, "content": {PROBLEM_JSON: {}}}
    for status in (400, 401, 403, 404, 409, 413, 422)
}
