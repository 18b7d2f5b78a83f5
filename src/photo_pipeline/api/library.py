"""``/api/assets`` and ``/api/duplicates``: browse the catalogue, fetch renditions and
originals (with HTTP Range, for video playback), review duplicates."""

from __future__ import annotations

import os
import re
from datetime import datetime
from typing import Annotated, Any, Literal
from urllib.parse import quote

import anyio
from fastapi import APIRouter, Path, Query, Request, Response
from fastapi.responses import FileResponse, JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.datastructures import Headers
from starlette.responses import MalformedRangeHeader, RangeNotSatisfiable
from starlette.types import Receive, Scope, Send

from photo_pipeline.api.listing_filters import ListingFilter
from photo_pipeline.api.problems import (
    PROBLEM_JSON,
    PROBLEM_RESPONSES,
    ApiError,
    Problem,
    problem,
)
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.dedupe.plan import annotate_exact_groups
from photo_pipeline.pipeline.library.browse import (
    AssetFilter,
    Browser,
    decode_group_cursor,
    encode_group_cursor,
)
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.originals import OpenedOriginal, open_original, playable
from photo_pipeline.pipeline.near.similar import near_group_page
from photo_pipeline.pipeline.renditions.rows import rendition_file

router = APIRouter(tags=["library"], responses=PROBLEM_RESPONSES)
media_router = APIRouter(tags=["library"], responses=PROBLEM_RESPONSES)

AssetId = Annotated[int, Path(ge=1, le=2**62)]
KINDS = ("thumbnail", "preview")


# media.capture_time.CONFIDENCES (a test keeps them equal)
Confidence = Literal["user", "camera", "inferred", "filename", "file_time"]
_CONFIDENCE = (
    "How far the date can be trusted, from taken_source: user (set by the user), "
    "camera, inferred (GPS or service time, zone worked out), filename, file_time "
    "(only the file's mtime: undated)."
)
_CAMERA = (
    "Make and model as people name them (make not repeated, vendor spelled one way); "
    "make and model keep what the file says."
)


class FirstFile(BaseModel):
    source: str = Field(description="The source folder.")
    path: str = Field(description="Relative to the source, as shown.")


class AlbumRef(BaseModel):
    id: int
    name: str


class AssetSummary(BaseModel):
    id: int
    content_hash: str
    format: str
    width: int
    height: int
    taken_local: str
    taken_utc: datetime | None
    taken_source: str
    taken_confidence: Confidence = Field(description=_CONFIDENCE)
    undated: bool = Field(description="Only the file's mtime dates it (confidence file_time).")
    tz_name: str | None
    make: str | None
    model: str | None
    camera: str | None = Field(description=_CAMERA)
    country: str | None
    city: str | None
    district: str | None = Field(None, description="Part of the city nearest the capture.")
    place: str | None = Field(None, description="District, city, country: those known.")
    name: str | None = Field(None, description="The file name of its first present file.")
    file: FirstFile | None = Field(None, description="Its first present file.")
    files: int
    thumbnail_url: str | None = Field(description="Null until rendered.")
    preview_url: str | None
    kind: Literal["photo", "video"] = "photo"
    duration: float | None = Field(None, description="Seconds (videos).")
    video_codec: str | None = None
    live: bool = Field(False, description="A Live Photo (motion_url plays it) or Motion Photo.")
    motion_photo: bool = Field(False, description="A Google/Samsung Motion Photo (live).")
    playable: bool = Field(False, description="original_url plays in a browser's <video>.")
    original_url: str
    motion_url: str | None = Field(None, description="A Live Photo's motion part (a video).")
    rating: int = Field(0, description="0 to 5 stars; 0: unrated.")
    favorite: bool = False
    rejected: bool = False
    tags: list[str] = Field(default_factory=list, description="Levels joined by |.")
    albums: list[AlbumRef] = Field(default_factory=list)


class AssetPage(BaseModel):
    assets: list[AssetSummary]
    next_cursor: str | None
    total: int | None = Field(
        None,
        description="On the first page (no cursor): how many assets the filters match; "
        "exact up to 5,000, estimated from samples beyond (total_exact false).",
    )
    total_exact: bool | None = None


class MotionPart(BaseModel):
    """A Live Photo's motion part: the MOV that is its own asset beside the still."""

    asset_id: int
    format: str
    mime: str
    size: int = Field(description="Bytes.")
    duration: float | None = Field(None, description="Seconds.")
    video_codec: str | None = None
    width: int
    height: int
    url: str = Field(description="Plays it (motion_url).")
    files: list[dict[str, Any]] = Field(description="Its files: source, path, size, state.")


class XmpStatus(BaseModel):
    state: str = Field(description="pending, written, read, embedded, read_only or failed.")
    sidecar: str | None = Field(description="The sidecar's name.")
    pending: bool = Field(description="A curation change waits to be written.")
    said: str = Field(description="The state in words (read_only: kept in the catalogue only).")
    message: str | None = Field(description="Why it failed, or is read-only (code: text).")


class AssetDetail(BaseModel):
    model_config = ConfigDict(extra="allow")

    id: int
    content_hash: str
    taken_local: str
    taken_source: str
    taken_confidence: Confidence = Field(description=_CONFIDENCE)
    undated: bool
    camera: str | None = Field(None, description=_CAMERA)
    place: str | None = None
    files: list[dict[str, Any]] = Field(description="Its files: source, path, size, state.")
    motion: MotionPart | None = Field(
        None, description="A Live Photo's motion part (its MOV): path, size, duration."
    )
    renditions: dict[str, dict[str, Any]]
    thumbnail_url: str | None
    preview_url: str | None
    kind: Literal["photo", "video"] = "photo"
    duration: float | None = None
    live: bool = False
    motion_photo: bool = False
    playable: bool = False
    original_url: str
    motion_url: str | None = None
    rating: int = 0
    favorite: bool = False
    rejected: bool = False
    tags: list[str] = Field(default_factory=list)
    albums: list[AlbumRef] = Field(default_factory=list)
    xmp: XmpStatus | None = Field(None, description="Its XMP sidecar (null: none written).")


class Decision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    group: str = Field(
        max_length=64,
        pattern=r"^(exact|near):[0-9]{1,19}$",
        description='"exact:<asset id>" or "near:<group id>"',
    )
    keep: list[Annotated[str, Field(max_length=4096)]] = Field(min_length=1, max_length=1000)


class Duplicates(BaseModel):
    exact: list[dict[str, Any]]
    near: list[dict[str, Any]]
    exact_next_cursor: str | None = Field(
        None, description="Pass as ?cursor= for the next page of exact groups."
    )
    near_next_cursor: str | None = None


def _media_fields(row: dict[str, Any]) -> dict[str, Any]:
    """kind, duration, live, playable and the original's URLs of an asset row."""
    motion_photo = bool(row.pop("is_motion_photo", False))
    live = row.pop("motion_asset_id", None) is not None or motion_photo
    return {
        "kind": row.get("kind") or "photo",
        "duration": row.pop("duration_seconds", None),
        "live": live,
        "motion_photo": motion_photo,
        "playable": playable(row.get("format"), row.get("video_codec")),
        "original_url": f"/api/assets/{row['id']}/original",
        "motion_url": f"/api/assets/{row['id']}/motion" if live else None,
    }


def _urls(asset_id: int, versions: dict[str, str]) -> dict[str, str | None]:
    return {
        f"{kind}_url": f"/api/assets/{asset_id}/{kind}?v={versions[kind]}"
        if kind in versions
        else None
        for kind in KINDS
    }


@router.get("/api/assets", response_model=AssetPage)
def list_assets(
    request: Request,
    where: ListingFilter,
    cursor: Annotated[str | None, Query(max_length=200, pattern=r"^[A-Za-z0-9_-]*={0,2}$")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 100,
    sort: Annotated[
        Literal["taken", "taken-desc", "taken-utc", "added"],
        Query(
            description="taken-utc: by the instant (the UTC time when known); taken: by "
            "the local time shown (taken-desc: newest first, the timeline's order); "
            "added: newest in the catalogue first. A cursor pages the order it was "
            "given for."
        ),
    ] = "taken-utc",
) -> AssetPage:
    """Assets in capture order (the UTC instant when known, or ``sort``) with filters;
    pass ``next_cursor`` as ``?cursor=`` for the next page. A Live Photo is one asset:
    its motion part is not listed on its own (``motion_url`` plays it)."""
    return asset_page_response(request, where, cursor=cursor, limit=limit, sort=sort)


def asset_page_response(
    request: Request, where: AssetFilter, *, cursor: str | None, limit: int, sort: str
) -> AssetPage:
    """A page of the listing ``where`` filters (``/api/assets``, ``/api/search``), with
    its total on the first page."""
    browser = Browser(api_state(request).library.sessions)
    rows, next_cursor = browser.asset_page(where, cursor=cursor, limit=limit, sort=sort)
    page = [
        AssetSummary(**{**row, **_media_fields(row), **_urls(row["id"], row.pop("renditions"))})
        for row in rows
    ]
    total, exact = browser.asset_total(where) if cursor is None else (None, None)
    return AssetPage(assets=page, next_cursor=next_cursor, total=total, total_exact=exact)


@router.get("/api/assets/{asset_id}", response_model=AssetDetail)
def get_asset(asset_id: AssetId, request: Request) -> AssetDetail:
    """Every catalogue fact about one asset: metadata (with where its date came from),
    files, renditions and its near-duplicate group."""
    found = Browser(api_state(request).library.sessions).asset(asset_id)
    if found is None:
        raise ApiError(404, "asset_not_found", f"no asset {asset_id}")
    versions = {kind: r["fingerprint"] for kind, r in found["renditions"].items()}
    media = _media_fields(found)
    if found["motion"] is not None:
        found["motion"]["url"] = media["motion_url"]
    return AssetDetail(**{**found, **media, **_urls(asset_id, versions)})


class _OpenedFileResponse(FileResponse):
    """A FileResponse of an already opened (and confined) file: it reads the
    descriptor, never the name again, and closes it however the response ends
    (sent, 416, client gone)."""

    def __init__(self, opened: OpenedOriginal, headers: dict[str, str]) -> None:
        self._fd = opened.fd
        proc = f"/proc/self/fd/{opened.fd}"
        super().__init__(
            proc if os.path.exists(proc) else f"/dev/fd/{opened.fd}",
            media_type=opened.mime,
            headers=headers,
            stat_result=os.fstat(opened.fd),
        )

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            refused = self._refused_range(scope)
            if refused is not None:
                await refused(scope, receive, send)
            else:
                await super().__call__(scope, receive, send)
        finally:
            os.close(self._fd)

    def _refused_range(self, scope: Scope) -> JSONResponse | None:
        """The problem answer to a Range header Starlette would refuse in text/plain,
        else None. Parsed by Starlette's own parser, under the conditions in which it
        parses one, so every Range it serves is served as before."""
        headers = Headers(scope=scope)
        range_, if_range = headers.get("range"), headers.get("if-range")
        if (
            range_ is None
            or self.stat_result is None
            or scope["method"] not in ("GET", "HEAD")
            or (if_range is not None and not self._should_use_range(if_range))
        ):
            return None
        size = self.stat_result.st_size
        try:
            self._parse_range_header(range_, size)
        except MalformedRangeHeader as exc:
            return _range_problem(400, range_, size, exc.content)
        except RangeNotSatisfiable:
            return _range_problem(416, range_, size)
        return None


def _range_problem(status: int, range_: str, size: int, why: str = "") -> JSONResponse:
    """400 ``invalid_range`` for a malformed Range header, or 416
    ``range_not_satisfiable`` for one that starts past the end, with the
    ``Content-Range: bytes */SIZE`` RFC 9110 asks of a 416."""
    shown = repr(range_[:100])
    if status == 416:
        detail = f"Range {shown} starts at or past the end of the {size} bytes"
        answer = problem(416, "range_not_satisfiable", detail, size=size)
        answer.headers["Content-Range"] = f"bytes */{size}"
        return answer
    return problem(400, "invalid_range", f"Range {shown}: {why or 'malformed'}")


_RANGE = re.compile(r"^bytes=([0-9]*)-([0-9]*)$")
_PAST_ANY_FILE = 10**19  # more digits than this name a byte past the end of any file


def _position(digits: str) -> int:
    """A byte position of a Range header, saturated: a longer number is past any end
    anyway, and int() of thousands of digits is slow (and refused past 4300)."""
    return int(digits) if len(digits) < 20 else _PAST_ANY_FILE


_CHUNK = 256 * 1024


class _WindowResponse(Response):
    """A window of an opened file (a Motion Photo's clip) as if it were the file,
    with single-range requests; the descriptor is closed however the response ends."""

    def __init__(self, opened: OpenedOriginal, headers: dict[str, str], range_: str | None):
        self._fd = opened.fd
        self._offset = opened.offset
        size = opened.size
        self._start, self._end = 0, size - 1
        status = 200
        match = _RANGE.match(range_.strip()) if range_ else None
        if match and (match[1] or match[2]):  # several ranges or garbage: the whole
            if not match[1]:
                self._start = max(0, size - _position(match[2]))  # a suffix: the last N
            else:
                self._start = _position(match[1])
                if match[2]:
                    self._end = min(size - 1, _position(match[2]))
            status = 206
        super().__init__(status_code=status, media_type=opened.mime, headers=headers)
        # Refused as a whole file's Range is (see _OpenedFileResponse): past the end
        # first, then a last byte before the first.
        self._refused: JSONResponse | None = None
        if status == 206 and self._start >= size:
            self._refused = _range_problem(416, range_ or "", size)
        elif status == 206 and self._start > self._end:
            self._refused = _range_problem(400, range_ or "", size, "last byte before first")
        elif status == 206:
            self.headers["content-range"] = f"bytes {self._start}-{self._end}/{size}"
        self.headers["content-length"] = str(max(0, self._end - self._start + 1))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            if self._refused is not None:
                await self._refused(scope, receive, send)
                return
            await send(
                {
                    "type": "http.response.start",
                    "status": self.status_code,
                    "headers": self.raw_headers,
                }
            )
            position = self._start
            while scope["method"] != "HEAD" and position <= self._end:
                size = min(_CHUNK, self._end - position + 1)
                chunk = await anyio.to_thread.run_sync(
                    os.pread, self._fd, size, self._offset + position
                )
                if not chunk:
                    break  # the file shrank: end early (the length was promised)
                position += len(chunk)
                await send(
                    {
                        "type": "http.response.body",
                        "body": chunk,
                        "more_body": position <= self._end,
                    }
                )
            if position <= self._end or scope["method"] == "HEAD" or self._start > self._end:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        finally:
            os.close(self._fd)


def _serve_original(request: Request, asset_id: int, part: str, download: bool) -> Response:
    lib = api_state(request).library
    opened = open_original(lib.sessions, asset_id, part)
    # private: the original is the user's; Range requests answered with 206
    headers = {"Cache-Control": "private, no-cache", "Accept-Ranges": "bytes"}
    if download:
        # A Motion Photo's clip is a video inside the JPEG: saved as the MP4 it is.
        name = f"{os.path.splitext(opened.name)[0]}.mp4" if opened.window else opened.name
        headers["Content-Disposition"] = _attachment(name)
    if opened.window:
        return _WindowResponse(opened, headers, request.headers.get("range"))
    return _OpenedFileResponse(opened, headers)


def _attachment(name: str) -> str:
    """A Content-Disposition that saves the file under its own name (RFC 6266: an ASCII
    fallback, and the name itself percent-encoded as UTF-8)."""
    fallback = "".join(
        c if c.isascii() and c.isprintable() and c not in '"\\;%' else "_" for c in name
    )
    encoded = quote(name, safe="", errors="replace")
    return f"attachment; filename=\"{fallback or 'original'}\"; filename*=UTF-8''{encoded}"


_DOWNLOAD = Annotated[
    bool, Query(description="Sent as an attachment under the file's name (a download).")
]


_ORIGINAL_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {}}},
    206: {"description": "Partial Content (a Range request)"},
    416: {
        "description": "Range Not Satisfiable",
        "model": Problem,
        "content": {PROBLEM_JSON: {}},
    },
}


@media_router.get(
    "/api/assets/{asset_id}/original",
    responses=_ORIGINAL_RESPONSES,
    response_class=Response,
)
def get_original(asset_id: AssetId, request: Request, download: _DOWNLOAD = False) -> Response:
    """The asset's original file, byte for byte, with its own Content-Type; Range
    requests (``bytes=0-99``, ``bytes=-500``) get 206 Partial Content, an
    unsatisfiable range 416. For video playback and downloads (``download=true``: as
    an attachment with the file's name)."""
    return _serve_original(request, asset_id, "original", download)


@media_router.get(
    "/api/assets/{asset_id}/motion",
    responses=_ORIGINAL_RESPONSES,
    response_class=Response,
)
def get_motion(asset_id: AssetId, request: Request, download: _DOWNLOAD = False) -> Response:
    """A Live Photo's motion part (its MOV), or the clip inside a Motion Photo, as
    ``original`` serves files; 404 for an asset without one."""
    return _serve_original(request, asset_id, "motion", download)


@media_router.get(
    "/api/assets/{asset_id}/{kind}",
    responses={200: {"content": {"image/jpeg": {}, "image/webp": {}, "image/avif": {}}}, 304: {}},
    response_class=Response,
)
def get_rendition(
    asset_id: AssetId, kind: Literal["thumbnail", "preview"], request: Request
) -> Response:
    """The asset's thumbnail or preview (404 until rendered). Cached for a year: its
    URL carries the rendering settings' version, and the ETag revalidates."""
    lib = api_state(request).library
    found = rendition_file(lib.sessions, lib.settings.home, asset_id, kind)
    if found is None:
        raise ApiError(404, "rendition_not_found", f"asset {asset_id} has no {kind} (yet)")
    etag = f'"{found["content_hash"][:20]}-{found["fingerprint"]}-{kind}"'
    headers = {"ETag": etag, "Cache-Control": "private, max-age=31536000, immutable"}
    if etag in request.headers.get("if-none-match", ""):
        return Response(status_code=304, headers=headers)
    return FileResponse(found["path"], media_type=found["mime"], headers=headers)


@router.get("/api/duplicates", response_model=Duplicates)
def duplicates(
    request: Request,
    kind: Literal["exact", "near"] | None = None,
    cursor: Annotated[str | None, Query(max_length=200, pattern=r"^[A-Za-z0-9_-]*={0,2}$")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> Duplicates:
    """Exact duplicates (one content, several files) and near-duplicate groups (the
    suggested keeper first), each with the decision recorded on it, if any: the first
    ``limit`` groups of each kind (``?kind=``: of that kind only), by asset id (exact)
    and keeper id (near). ``exact_next_cursor``/``near_next_cursor`` as ``?cursor=``
    give the next page of that kind."""
    lib = api_state(request).library
    browser = Browser(lib.sessions)
    after = {"exact": 0, "near": 0}
    kinds = {"exact", "near"} if kind is None else {kind}
    if cursor is not None:
        cursor_kind, after[cursor_kind] = decode_group_cursor(cursor)
        if kind is not None and kind != cursor_kind:
            raise ApiError(422, "invalid_cursor", f"the cursor pages {cursor_kind} groups")
        kinds = {cursor_kind}
    exact: list[dict[str, Any]] = []
    near: list[dict[str, Any]] = []
    exact_next = near_next = None
    if "exact" in kinds:
        exact, exact_next = Catalog(lib.sessions).duplicate_page(after=after["exact"], limit=limit)
        exact = annotate_exact_groups(lib.sessions, exact)
    if "near" in kinds:
        near, near_next = near_group_page(lib.sessions, after=after["near"], limit=limit)
    decisions = browser.decisions()
    ids = [g["asset_id"] for g in exact] + [a["asset_id"] for g in near for a in g["assets"]]
    versions = browser.rendition_versions(ids)
    for group in exact:
        group["group"] = key = f"exact:{group['asset_id']}"
        group["decision"] = decisions.get(key)
        group.update(_urls(group["asset_id"], versions.get(group["asset_id"], {})))
    for group in near:
        group["group"] = key = f"near:{group['keeper']}"
        group["decision"] = decisions.get(key)
        for asset in group["assets"]:
            asset.update(_urls(asset["asset_id"], versions.get(asset["asset_id"], {})))
    return Duplicates(
        exact=exact,
        near=near,
        exact_next_cursor=None if exact_next is None else encode_group_cursor("exact", exact_next),
        near_next_cursor=None if near_next is None else encode_group_cursor("near", near_next),
    )


@router.post("/api/duplicates/decisions", status_code=201)
def decide(body: Decision, request: Request) -> dict[str, Any]:
    """Record the keepers of one group (file paths for an exact group, asset ids for a
    near group). Nothing is deleted."""
    return Browser(api_state(request).library.sessions).decide(body.group, body.keep)
