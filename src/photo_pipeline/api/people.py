"""``/api/people`` and ``/api/faces``: the people the faces job grouped, what the user
decides about them (names, merges, faces moved, released, "not a face"), an asset's
faces, and each face's crop (``crop_router``: an <img> loads it with the query token).
``/api/assets?person=ID`` lists a person's photos (api/library.py)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Request, Response
from pydantic import BaseModel, ConfigDict, Field

from photo_pipeline.api.models import PLAIN_TEXT
from photo_pipeline.api.problems import PROBLEM_RESPONSES
from photo_pipeline.api.state import api_state
from photo_pipeline.pipeline.faces import people as decide
from photo_pipeline.pipeline.xmp import request_write

router = APIRouter(tags=["people"], responses=PROBLEM_RESPONSES)
crop_router = APIRouter(tags=["people"], responses=PROBLEM_RESPONSES)

PersonId = Annotated[int, Path(ge=1, le=2**62)]
FaceId = Annotated[int, Path(ge=1, le=2**62)]
AssetId = Annotated[int, Path(ge=1, le=2**62)]
FaceIds = Annotated[
    list[Annotated[int, Field(ge=1, le=2**62)]],
    Field(min_length=1, max_length=1000, description="Face ids."),
]


class Person(BaseModel):
    id: int
    name: str | None = Field(description="Null until the user names them.")
    faces: int
    assets: int = Field(description="Photos with a face of theirs.")
    cover_face_id: int | None = Field(description="The face shown for them (its crop).")


class Face(BaseModel):
    id: int
    asset_id: int
    person_id: int | None
    box_left: float = Field(description="Fractions of the photo's width and height.")
    box_top: float
    box_width: float
    box_height: float
    assigned: str | None = Field(description="auto (the grouping), user, or null.")
    not_face: bool


class PersonDetail(BaseModel):
    person: Person
    faces: list[Face]


class AssetFace(Face):
    person: str | None = Field(description="The person's name, if named.")


class AssetFaces(BaseModel):
    asset_id: int
    scanned: bool = Field(description="Whether the faces job looked at it yet.")
    too_small: int = Field(description="Faces skipped as too small to recognise.")
    blurred: int = Field(description="Faces skipped as too blurred.")
    faces: list[AssetFace]


class Naming(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str = Field(min_length=1, max_length=200, pattern=PLAIN_TEXT)


class Merging(BaseModel):
    model_config = ConfigDict(extra="forbid")
    people: list[Annotated[int, Field(ge=1, le=2**62)]] = Field(
        min_length=1, max_length=100, description="People whose faces join this one."
    )


class Moving(BaseModel):
    model_config = ConfigDict(extra="forbid")
    faces: FaceIds
    person: int | None = Field(
        None, ge=1, le=2**62, description="Their person; null: a new person (a split)."
    )


class Releasing(BaseModel):
    model_config = ConfigDict(extra="forbid")
    faces: FaceIds
    not_face: bool = Field(False, description="They are no faces at all.")


class Moved(BaseModel):
    person_id: int
    faces_moved: int


def _person(request: Request, person_id: int) -> Person:
    found = [p for p in decide.list_people(api_state(request).library.sessions)]
    for person in found:
        if person["id"] == person_id:
            return Person(**person)
    raise decide.PersonNotFound(detail=f"no person {person_id}")


@router.get("/api/people", response_model=list[Person])
def list_people(request: Request) -> list[Person]:
    """Every person, named ones first (by name), then the others by their face count."""
    return [Person(**row) for row in decide.list_people(api_state(request).library.sessions)]


def _written(request: Request) -> None:
    """After a people decision the sidecars' MWG regions follow: an ``xmp_write`` is
    queued (or joined) while the outbox holds changes (pipeline.xmp)."""
    request_write(api_state(request).library.service)


@router.get("/api/people/{person_id}", response_model=PersonDetail)
def get_person(person_id: PersonId, request: Request) -> PersonDetail:
    """A person and their faces (404 ``person_not_found``)."""
    faces = decide.person_faces(api_state(request).library.sessions, person_id)
    return PersonDetail(person=_person(request, person_id), faces=[Face(**f) for f in faces])


@router.patch("/api/people/{person_id}", response_model=Person)
def name_person(person_id: PersonId, body: Naming, request: Request) -> Person:
    """Name or rename a person: their faces are confirmed as theirs. 409
    ``person_exists`` when another person has the name (merge them instead)."""
    decide.name_person(api_state(request).library.sessions, person_id, body.name)
    _written(request)
    return _person(request, person_id)


@router.post("/api/people/{person_id}/merge", response_model=Person)
def merge_people(person_id: PersonId, body: Merging, request: Request) -> Person:
    """The faces of ``people`` join this person, and they are gone."""
    decide.merge_people(api_state(request).library.sessions, person_id, list(body.people))
    _written(request)
    return _person(request, person_id)


@router.post("/api/faces/move", response_model=Moved)
def move_faces(body: Moving, request: Request) -> Moved:
    """Faces go to a person (null: a new one); the grouping never moves them back."""
    done = decide.move_faces(api_state(request).library.sessions, list(body.faces), body.person)
    _written(request)
    return Moved(person_id=done["id"], faces_moved=done["faces_moved"])


@router.post("/api/faces/release", response_model=int)
def release_faces(body: Releasing, request: Request) -> int:
    """Faces belong to no one (``not_face``: are no faces); for good."""
    released = decide.release_faces(
        api_state(request).library.sessions, list(body.faces), not_face=body.not_face
    )
    _written(request)
    return released


@router.get("/api/assets/{asset_id}/faces", response_model=AssetFaces)
def asset_faces(asset_id: AssetId, request: Request) -> AssetFaces:
    """The faces found in an asset, with their people, and how many were skipped."""
    found = decide.asset_faces(api_state(request).library.sessions, asset_id)
    return AssetFaces(**found)


@crop_router.get(
    "/api/faces/{face_id}/crop",
    responses={200: {"content": {"image/jpeg": {}}}},
    response_class=Response,
)
def face_crop(face_id: FaceId, request: Request) -> Response:
    """A square JPEG of the face, cut from the photo's preview (404 ``face_not_found``)."""
    lib = api_state(request).library
    data = decide.face_crop(lib.sessions, lib.settings.home, face_id)
    return Response(
        data, media_type="image/jpeg", headers={"Cache-Control": "private, max-age=3600"}
    )
