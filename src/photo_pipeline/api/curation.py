"""``/api/curation``, ``/api/tags``, ``/api/albums`` and the curation routes of one
asset: favourite, rating, reject flag, tags, albums. Every write is idempotent: it
answers which assets it changed and which already were so (``changed``/``unchanged``),
and repeating it changes nothing. ``/api/assets?album=&tag=&rating=&favorite=&rejected=``
lists by them (api/library.py)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES, ApiError
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline import curation
from photo_pipeline.pipeline.curation import MAX_ASSET_IDS, MAX_RATING, Changed
from photo_pipeline.pipeline.library.browse import Browser
from photo_pipeline.pipeline.xmp import request_write

router = APIRouter(tags=["curation"], responses=PROBLEM_RESPONSES)

AssetId = Annotated[int, Path(ge=1, le=2**62)]
AlbumId = Annotated[int, Path(ge=1, le=2**62)]
Ids = Annotated[
    list[Annotated[int, Field(ge=1, le=2**62)]],
    Field(min_length=1, max_length=MAX_ASSET_IDS, description="Asset ids."),
]
TagText = Annotated[str, Field(min_length=1, max_length=500, pattern=PLAIN_TEXT)]
AlbumName = Annotated[str, Field(min_length=1, max_length=200, pattern=PLAIN_TEXT)]


class CurationChange(BaseModel):
    changed: list[int] = Field(description="Assets this request changed.")
    unchanged: list[int] = Field(description="Assets that already were so.")


class RatingBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rating: int = Field(ge=0, le=MAX_RATING, description="0 to 5 stars; 0: unrated.")


class TagBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    tag: TagText = Field(description="Levels joined by | nest: Places|France|Paris.")


class CurationAction(BaseModel):
    """One action on many assets (the web UI's selection)."""

    model_config = ConfigDict(extra="forbid")
    ids: Ids
    action: Literal[
        "rate",
        "favorite",
        "unfavorite",
        "reject",
        "unreject",
        "tag",
        "untag",
        "add_to_album",
        "remove_from_album",
    ]
    rating: int | None = Field(None, ge=0, le=MAX_RATING, description="For rate.")
    tag: TagText | None = Field(None, description="For tag and untag.")
    album: int | None = Field(None, ge=1, le=2**62, description="For the album actions.")


class Tag(BaseModel):
    id: int
    path: str = Field(description="The whole tag, levels joined by |.")
    name: str = Field(description="Its last level.")
    parent: str | None
    depth: int
    count: int = Field(description="Assets carrying exactly this tag.")


class NewAlbum(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: AlbumName


class AlbumChange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: AlbumName | None = None
    cover_asset_id: int | None = Field(None, ge=1, le=2**62, description="An asset in it.")


class AlbumAssets(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ids: Ids


class Album(BaseModel):
    id: int
    name: str
    count: int = Field(description="Its photos.")
    cover_asset_id: int | None = Field(description="Chosen, or the first photo added.")
    cover_chosen: bool
    cover_url: str | None = Field(description="The cover's thumbnail (null until rendered).")
    taken_from: str | None = Field(description="Local time of its earliest photo.")
    taken_to: str | None = Field(description="Local time of its latest photo.")
    created_at: datetime
    updated_at: datetime
    assets_url: str = Field(description="Its photos: /api/assets?album=ID.")


class AlbumMembersChange(CurationChange):
    album: Album


def _sessions(request: Request) -> Any:
    return api_state(request).library.sessions


def _written(request: Request) -> None:
    """After a curation change the sidecars follow: an ``xmp_write`` is queued (or
    joined) while the outbox holds changes (pipeline.xmp), before the answer goes, so
    that a client sees the job."""
    request_write(api_state(request).library.service)


def _outcome(request: Request, changed: Changed) -> CurationChange:
    _written(request)
    return CurationChange(changed=changed.changed, unchanged=changed.unchanged)


def _albums(request: Request, rows: list[dict[str, Any]]) -> list[Album]:
    covers = [r["cover_asset_id"] for r in rows if r["cover_asset_id"] is not None]
    versions = Browser(_sessions(request)).rendition_versions(covers)
    shown = []
    for row in rows:
        cover = row["cover_asset_id"]
        version = versions.get(cover, {}).get("thumbnail") if cover is not None else None
        cover_url = f"/api/assets/{cover}/thumbnail?v={version}" if version else None
        shown.append(Album(**row, cover_url=cover_url, assets_url=f"/api/assets?album={row['id']}"))
    return shown


# ── one asset ─────────────────────────────────────────────────────────────────
class Marks(BaseModel):
    asset_id: int
    rating: int
    favorite: bool
    rejected: bool
    tags: list[str]
    albums: list[dict[str, Any]] = Field(description="{id, name} of each of its albums.")


def _marks(request: Request, asset_id: int) -> Marks:
    return Marks(asset_id=asset_id, **curation.curation_of(_sessions(request), asset_id))


# Each of these paths also answers GET (the asset's curation), so that the methods a
# path allows are the ones its schema lists.
@router.get("/api/assets/{asset_id}/rating", response_model=Marks)
@router.get("/api/assets/{asset_id}/favorite", response_model=Marks)
@router.get("/api/assets/{asset_id}/rejected", response_model=Marks)
@router.get("/api/assets/{asset_id}/tags", response_model=Marks)
def get_marks(asset_id: AssetId, request: Request) -> Marks:
    """The asset's curation: rating, favourite, rejected, tags, albums."""
    return _marks(request, asset_id)


@router.put("/api/assets/{asset_id}/rating", response_model=CurationChange)
def put_rating(asset_id: AssetId, body: RatingBody, request: Request) -> CurationChange:
    """Rate the asset 0-5 (0 takes the rating off)."""
    return _outcome(request, curation.set_rating(_sessions(request), [asset_id], body.rating))


@router.put("/api/assets/{asset_id}/favorite", response_model=CurationChange)
def put_favorite(asset_id: AssetId, request: Request) -> CurationChange:
    """Make the asset a favourite."""
    return _outcome(request, curation.set_favorite(_sessions(request), [asset_id], True))


@router.delete("/api/assets/{asset_id}/favorite", response_model=CurationChange)
def delete_favorite(asset_id: AssetId, request: Request) -> CurationChange:
    """The asset is no longer a favourite."""
    return _outcome(request, curation.set_favorite(_sessions(request), [asset_id], False))


@router.put("/api/assets/{asset_id}/rejected", response_model=CurationChange)
def put_rejected(asset_id: AssetId, request: Request) -> CurationChange:
    """Flag the asset as rejected (nothing is deleted)."""
    return _outcome(request, curation.set_rejected(_sessions(request), [asset_id], True))


@router.delete("/api/assets/{asset_id}/rejected", response_model=CurationChange)
def delete_rejected(asset_id: AssetId, request: Request) -> CurationChange:
    """Take the reject flag off."""
    return _outcome(request, curation.set_rejected(_sessions(request), [asset_id], False))


@router.post("/api/assets/{asset_id}/tags", response_model=CurationChange)
def post_tag(asset_id: AssetId, body: TagBody, request: Request) -> CurationChange:
    """Put a tag on the asset."""
    return _outcome(request, curation.add_tag(_sessions(request), body.tag, [asset_id]))


@router.delete("/api/assets/{asset_id}/tags", response_model=CurationChange)
def delete_tag(
    asset_id: AssetId,
    request: Request,
    tag: Annotated[str, Query(min_length=1, max_length=500, pattern=PLAIN_TEXT)],
) -> CurationChange:
    """Take a tag off the asset (``?tag=``; its children stay)."""
    return _outcome(request, curation.remove_tag(_sessions(request), tag, [asset_id]))


# ── many assets ───────────────────────────────────────────────────────────────
@router.post("/api/curation", response_model=CurationChange)
def post_curation(body: CurationAction, request: Request) -> CurationChange:
    """One action on many assets at once: all of them or, when one id is no asset
    (404 ``asset_not_found``), none."""
    sessions = _sessions(request)
    action, ids = body.action, body.ids
    if action == "rate":
        if body.rating is None:
            raise ApiError(422, "invalid_rating", "rate needs a rating (0 to 5)")
        return _outcome(request, curation.set_rating(sessions, ids, body.rating))
    if action in ("favorite", "unfavorite"):
        return _outcome(request, curation.set_favorite(sessions, ids, action == "favorite"))
    if action in ("reject", "unreject"):
        return _outcome(request, curation.set_rejected(sessions, ids, action == "reject"))
    if action in ("tag", "untag"):
        if body.tag is None:
            raise ApiError(422, "invalid_tag", f"{action} needs a tag")
        change = curation.add_tag if action == "tag" else curation.remove_tag
        return _outcome(request, change(sessions, body.tag, ids))
    if body.album is None:
        raise ApiError(422, "album_not_found", f"{action} needs an album id")
    move = curation.add_to_album if action == "add_to_album" else curation.remove_from_album
    return _outcome(request, move(sessions, body.album, ids)[1])


# ── tags ──────────────────────────────────────────────────────────────────────
@router.get("/api/tags", response_model=list[Tag])
def get_tags(request: Request) -> list[Tag]:
    """Every tag, children after their parent, with how many assets carry it."""
    return [Tag(**row) for row in curation.list_tags(_sessions(request))]


# ── albums ────────────────────────────────────────────────────────────────────
@router.get("/api/albums", response_model=list[Album])
def get_albums(request: Request) -> list[Album]:
    """Every album by name, with its count, cover and date range."""
    return _albums(request, curation.list_albums(_sessions(request)))


@router.post(
    "/api/albums",
    response_model=Album,
    status_code=201,
    responses={200: {"model": Album, "description": "The album of that name, already there."}},
)
def post_album(body: NewAlbum, request: Request, response: Response) -> Album:
    """Make an album: 201, or 200 with the album of that name (whatever its case)
    when there is one already."""
    made, created = curation.create_album(_sessions(request), body.name)
    if not created:
        response.status_code = 200
    return _albums(request, [made])[0]


@router.get("/api/albums/{album_id}", response_model=Album)
def get_album(album_id: AlbumId, request: Request) -> Album:
    """One album; its photos are ``/api/assets?album=ID``."""
    return _albums(request, [curation.album(_sessions(request), album_id)])[0]


@router.patch("/api/albums/{album_id}", response_model=Album)
def patch_album(album_id: AlbumId, body: AlbumChange, request: Request) -> Album:
    """Rename the album (409 ``album_exists`` when another has the name) or choose
    its cover (422 ``asset_not_in_album`` for a photo not in it)."""
    changed = curation.update_album(
        _sessions(request), album_id, name=body.name, cover_asset_id=body.cover_asset_id
    )
    _written(request)  # a new name is in its photos' sidecars
    return _albums(request, [changed])[0]


@router.delete("/api/albums/{album_id}", response_model=Album)
def delete_album(album_id: AlbumId, request: Request) -> Album:
    """Remove the album; its photos stay in the library."""
    gone = curation.delete_album(_sessions(request), album_id)
    _written(request)
    return _albums(request, [gone])[0]


@router.post("/api/albums/{album_id}/assets", response_model=AlbumMembersChange)
def post_album_assets(album_id: AlbumId, body: AlbumAssets, request: Request) -> AlbumMembersChange:
    """Put assets in the album."""
    summary, changed = curation.add_to_album(_sessions(request), album_id, body.ids)
    return AlbumMembersChange(
        **_outcome(request, changed).model_dump(), album=_albums(request, [summary])[0]
    )


@router.delete("/api/albums/{album_id}/assets/{asset_id}", response_model=AlbumMembersChange)
def delete_album_asset(
    album_id: AlbumId, asset_id: AssetId, request: Request
) -> AlbumMembersChange:
    """Take one asset out of the album (``POST /api/curation`` takes out many)."""
    summary, changed = curation.remove_from_album(_sessions(request), album_id, [asset_id])
    return AlbumMembersChange(
        **_outcome(request, changed).model_dump(), album=_albums(request, [summary])[0]
    )
