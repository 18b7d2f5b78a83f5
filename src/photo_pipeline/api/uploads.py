"""``/api/uploads``: the tus 1.0 resumable-upload protocol (core, creation,
creation-with-upload, termination and expiration;
https://tus.io/protocols/resumable-upload), and the pre-check ``HEAD
/api/assets?sha256=`` (200: the library has this content, 404: it has not).

Our own, not ``tuspyserver``. Reviewed (4.4.3): its PATCH dependency writes the body
before the route's ``auth`` dependency runs; it acknowledges an offset after
``flush()`` without an fsync (its ``storage=`` backend fsyncs, but holds the whole
body in memory first); an OSError while writing (a full disk) is kept as a string in
the upload's info and the PATCH still answers 204; file I/O and a blocking file lock
run on the event loop; and nothing in it reaches a crash-safe landing under the
user's file name, per-day quotas or a 507. The protocol's core is small: this module
speaks it, ``pipeline.uploads`` keeps the bytes and the rows.

Answers carry ``Tus-Resumable: 1.0.0`` (refusals of a PATCH and a 412 too); errors
are problem+json (a HEAD's without its body) with the statuses tus clients act on:
409 (offset mismatch: ask and resume), 423 (busy: retry), 404 (gone: start again),
413 (too large, over the day's quota), 507 (the disk is full).
"""

from __future__ import annotations

import base64
import binascii
import re
from email.utils import format_datetime
from types import TracebackType
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, FastAPI, Path, Query, Request, Response
from fastapi.responses import JSONResponse
from starlette.requests import ClientDisconnect

from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError, problem
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.pipeline.uploads.ledger import Upload
from photo_pipeline.pipeline.uploads.service import AlreadyComplete, Uploads

# 412: another protocol version; 423: another request is sending the upload; 507: the
# disk is full. Each a problem too.
_TUS_RESPONSES: dict[int | str, dict[str, Any]] = {
    **PROBLEM_RESPONSES,
    **{status: PROBLEM_RESPONSES[409] for status in (412, 423, 507)},
}
router = APIRouter(tags=["uploads"], responses=_TUS_RESPONSES)

TUS_VERSION = "1.0.0"
TUS_EXTENSIONS = "creation,creation-with-upload,termination,expiration"
OFFSET_STREAM = "application/offset+octet-stream"
PREFIX = "/api/uploads"
_BATCH = 1 << 20  # bytes gathered before each write: one thread hop per MiB
_DIGITS = re.compile(r"[0-9]{1,19}", re.ASCII)
_METADATA_KEY = re.compile(r"[A-Za-z0-9._-]{1,64}", re.ASCII)
_MAX_METADATA = 8 << 10

UploadId = Annotated[str, Path(pattern=r"^[0-9a-f]{32}$")]


def uploads_of(request: Request) -> Uploads:
    found: Uploads = request.app.state.uploads  # set by api.app
    return found


def _tus(extra: dict[str, str] | None = None) -> dict[str, str]:
    return {"Tus-Resumable": TUS_VERSION, "Cache-Control": "no-store", **(extra or {})}


def _expires(upload: Upload) -> dict[str, str]:
    if upload.finished_at is not None:
        return {}
    return {"Upload-Expires": format_datetime(upload.expires_at, usegmt=True)}


def _check_version(request: Request) -> None:
    if request.headers.get("tus-resumable") != TUS_VERSION:
        raise TusVersionUnsupported()


def _number(request: Request, name: str) -> int:
    raw = request.headers.get(name)
    if raw is None:
        raise ApiError(400, "missing_header", f"{name} is required")
    if not _DIGITS.fullmatch(raw.strip()):
        raise ApiError(400, "invalid_header", f"{name} must be a non-negative integer")
    return int(raw)


def parse_metadata(raw: str | None) -> dict[str, str]:
    """tus ``Upload-Metadata``: comma-separated ``key base64(value)`` pairs. Values are
    decoded as UTF-8, undecodable bytes replaced (they name a file, nothing more)."""
    if not raw:
        return {}
    if len(raw) > _MAX_METADATA:
        raise ApiError(400, "invalid_metadata", f"Upload-Metadata over {_MAX_METADATA} bytes")
    found: dict[str, str] = {}
    for pair in raw.split(","):
        key, _, value = pair.strip().partition(" ")
        if not _METADATA_KEY.fullmatch(key) or key in found:
            raise ApiError(400, "invalid_metadata", "Upload-Metadata: a key is invalid or repeated")
        try:
            found[key] = base64.b64decode(value.strip(), validate=True).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            raise ApiError(
                400, "invalid_metadata", f"Upload-Metadata: the value of {key} is not base64"
            ) from None
    return found


def _mtime_ns(metadata: dict[str, str]) -> int | None:
    """tus-js-client's ``lastModified`` (what our UI sends: the File's, in ms since the
    epoch); anything but a plausible integer is ignored."""
    raw = metadata.get("lastModified", "").strip()
    if not _DIGITS.fullmatch(raw) or int(raw) > 10**14:
        return None
    return int(raw) * 1_000_000


@router.options(PREFIX, include_in_schema=False)
@router.options(PREFIX + "/{upload_id}", include_in_schema=False)
def discover(request: Request) -> Response:
    """What this tus server supports."""
    limit = uploads_of(request).settings.max_file_bytes
    headers = _tus({"Tus-Version": TUS_VERSION, "Tus-Extension": TUS_EXTENSIONS})
    headers["Tus-Max-Size"] = str(limit)
    return Response(status_code=204, headers=headers)


@router.post(PREFIX, status_code=201, response_class=Response)
async def create_upload(request: Request) -> Response:
    """tus creation: ``Upload-Length`` and ``Upload-Metadata`` (``filename``,
    ``lastModified`` in ms, ``device``: the folder under ``uploads/``). 201 with the
    upload's ``Location``. With a body (``creation-with-upload``: Content-Type
    ``application/offset+octet-stream``) its first bytes too, in the same request,
    and the ``Upload-Offset`` they reached."""
    _check_version(request)
    if "upload-defer-length" in request.headers:
        raise ApiError(400, "defer_length_unsupported", "send Upload-Length")
    length = _number(request, "upload-length")
    metadata = parse_metadata(request.headers.get("upload-metadata"))
    with_body = _content_type(request) == OFFSET_STREAM
    if not with_body and request.headers.get("content-type") and _declared(request):
        raise ApiError(415, "unsupported_media_type", f"an upload's bytes are {OFFSET_STREAM}")
    uploads = uploads_of(request)
    upload = await anyio.to_thread.run_sync(
        uploads.create,
        length,
        metadata.get("filename"),
        metadata.get("device"),
        _mtime_ns(metadata),
    )
    headers = {"Location": f"{PREFIX}/{upload.id}"}
    if upload.finished_at is None and with_body:
        try:
            upload, reached = await _receive(request, uploads, upload.id, 0, upload)
        except ClientDisconnect:
            return Response(status_code=201)  # nobody hears it; the client will HEAD
        except PhotoPipelineError as exc:
            return _refusal(exc, headers)  # the upload exists: the client may resume it
        headers["Upload-Offset"] = str(reached)
    elif upload.finished_at is not None:
        headers["Upload-Offset"] = str(upload.length)
    return Response(status_code=201, headers=_tus({**headers, **_expires(upload)}))


def _content_type(request: Request) -> str:
    return request.headers.get("content-type", "").split(";")[0].strip()


def _declared(request: Request) -> int | None:
    raw = request.headers.get("content-length")
    return int(raw) if raw and _DIGITS.fullmatch(raw) else None


def _refusal(exc: PhotoPipelineError, headers: dict[str, str] | None = None) -> Response:
    """A refusal while the request's body may still be on the way (409 while a client
    sends 16 MiB): answered, and the connection closed rather than the body waited for."""
    answer = problem(exc.status, exc.code, exc.detail, **exc.extra)
    answer.headers.update(_tus({**(headers or {}), "Connection": "close"}))
    if isinstance(exc, TusVersionUnsupported):
        answer.headers["Tus-Version"] = TUS_VERSION
    return answer


@router.head(PREFIX + "/{upload_id}", response_class=Response)
def upload_offset(request: Request, upload_id: UploadId) -> Response:
    """tus core: how many bytes of the upload the server holds (``Upload-Offset``)."""
    upload, offset = uploads_of(request).get(upload_id)
    headers = {"Upload-Offset": str(offset), "Upload-Length": str(upload.length)}
    return Response(status_code=200, headers=_tus({**headers, **_expires(upload)}))


@router.patch(PREFIX + "/{upload_id}", status_code=204, response_class=Response)
async def append(request: Request, upload_id: UploadId) -> Response:
    """tus core: append the body at ``Upload-Offset``. What arrived before a dropped
    connection is kept (fsynced): the client asks for the offset and resumes."""
    try:
        _check_version(request)
        if _content_type(request) != OFFSET_STREAM:
            raise ApiError(415, "unsupported_media_type", f"a PATCH body is {OFFSET_STREAM}")
        offset = _number(request, "upload-offset")
        upload, reached = await _receive(request, uploads_of(request), upload_id, offset)
    except ClientDisconnect:
        return Response(status_code=204)  # nobody hears it; the client will HEAD
    except PhotoPipelineError as exc:
        return _refusal(exc)
    return Response(
        status_code=204, headers=_tus({"Upload-Offset": str(reached), **_expires(upload)})
    )


async def _receive(
    request: Request, uploads: Uploads, upload_id: str, offset: int, created: Upload | None = None
) -> tuple[Upload, int]:
    """Append the request's body to the upload at ``offset``; the upload (landed once
    whole) and the offset reached. ``created``: the upload this request created."""
    try:
        async with _writing(uploads, upload_id, offset, created) as (upload, writer):
            declared = _declared(request)
            if declared is not None and offset + declared > upload.length:
                raise ApiError(
                    413, "exceeds_upload_length", f"the upload has {upload.length} bytes in all"
                )
            batch = bytearray()
            try:
                async for chunk in request.stream():
                    if writer.offset + len(batch) + len(chunk) > upload.length:
                        raise ApiError(
                            413,
                            "exceeds_upload_length",
                            f"the upload has {upload.length} bytes in all",
                        )
                    batch += chunk
                    if len(batch) >= _BATCH:
                        full, batch = batch, bytearray()  # handed over, not copied
                        await anyio.to_thread.run_sync(writer.write, full)
            finally:
                if batch:  # what arrived is kept, even from a request that broke off
                    await anyio.to_thread.run_sync(writer.write, batch)
            reached = writer.offset
        return writer.landed or upload, reached
    except AlreadyComplete as done:
        return done.upload, done.upload.length


class _writing:
    """``Uploads.writing`` entered and left on a worker thread (it does file and
    database work) from the event loop."""

    def __init__(
        self, uploads: Uploads, upload_id: str, offset: int, created: Upload | None
    ) -> None:
        self._context = uploads.writing(upload_id, offset, created)

    async def __aenter__(self):  # type: ignore[no-untyped-def]
        return await anyio.to_thread.run_sync(self._context.__enter__)

    async def __aexit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> bool | None:
        return await anyio.to_thread.run_sync(self._context.__exit__, kind, error, traceback)


@router.delete(PREFIX + "/{upload_id}", status_code=204, response_class=Response)
def terminate(request: Request, upload_id: UploadId) -> Response:
    """tus termination: an unfinished upload's bytes are removed (a finished upload's
    file stays in the library)."""
    _check_version(request)
    uploads_of(request).terminate(upload_id)
    return Response(status_code=204, headers=_tus())


Sha256 = Annotated[str, Query(pattern=r"^[0-9a-fA-F]{64}$", description="SHA-256, hex.")]


@router.head("/api/assets", response_class=Response)
def asset_known(request: Request, sha256: Sha256) -> Response:
    """The upload pre-check: 200 when the library holds a file with this SHA-256,
    404 when not (send it). Only HEAD: ``GET /api/assets`` lists assets."""
    if not uploads_of(request).known(sha256.lower()):
        answer = problem(404, "asset_unknown", "no file in the library has this content")
        answer.headers["Cache-Control"] = "no-store"
        return answer
    return Response(status_code=200, headers={"Cache-Control": "no-store"})


class TusVersionUnsupported(ApiError):
    """A request in another protocol version: 412 naming the one spoken here."""

    def __init__(self) -> None:
        super().__init__(
            412,
            "tus_version_unsupported",
            f"send Tus-Resumable: {TUS_VERSION} (the only version this server speaks)",
        )


def install(app: FastAPI, uploads: Uploads) -> None:
    """Serve uploads on ``app``: the routes (``router``, included by the caller with
    its authentication) find ``uploads`` on the app's state."""
    app.state.uploads = uploads

    @app.exception_handler(TusVersionUnsupported)
    async def version_unsupported(_: Request, exc: TusVersionUnsupported) -> JSONResponse:
        answer = problem(exc.status, exc.code, exc.detail)
        answer.headers.update({"Tus-Resumable": TUS_VERSION, "Tus-Version": TUS_VERSION})
        return answer
