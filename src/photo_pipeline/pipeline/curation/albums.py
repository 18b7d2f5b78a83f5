"""Albums: named sets of assets (an asset may be in many). An album's date range is
that of its photos, read when asked (so a shifted date moves it); its cover is the
asset chosen, or the first one added. Removing an album leaves its photos."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, func, select, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import album_assets, albums, assets
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.curation import names
from photo_pipeline.pipeline.curation.assets import checked_ids, chunks
from photo_pipeline.pipeline.curation.changes import touch
from photo_pipeline.pipeline.curation.marks import Changed

MAX_NAME_LENGTH = 200
_MAX_ID = 2**63 - 1


class AlbumNotFound(PhotoPipelineError):
    code = "album_not_found"
    status = 404


class AlbumExists(PhotoPipelineError):
    code = "album_exists"
    status = 409


class InvalidAlbumName(PhotoPipelineError):
    code = "invalid_album_name"
    status = 422


class NotInAlbum(PhotoPipelineError):
    code = "asset_not_in_album"
    status = 422


def normalise_name(text: str) -> tuple[str, str]:
    """An album's name as stored (space runs made one, NFC) and its casefolded key."""
    if not isinstance(text, str):
        raise InvalidAlbumName(detail="an album's name is text")
    return names.normalise_name(
        text, InvalidAlbumName, "an album's", "an album needs a name", MAX_NAME_LENGTH
    )


def in_album(album_id: int) -> ColumnElement[bool]:
    """The listing condition: the asset is in the album (a primary-key probe)."""
    return exists().where(
        album_assets.c.album_id == album_id, album_assets.c.asset_id == assets.c.id
    )


def _resolve(session: Session, ref: int | str) -> int:
    """The id of the album ``ref`` names: an id (int), or a name (text; a name of digits
    that no album has is read as an id)."""
    if isinstance(ref, str):
        try:
            _, key = normalise_name(ref)
        except InvalidAlbumName:
            key = None
        if key is not None:
            found: int | None = session.scalar(select(albums.c.id).where(albums.c.key == key))
            if found is not None:
                return found
        if not (ref.isascii() and ref.isdigit()):
            raise AlbumNotFound(detail=f"no album {ref!r}")
        ref = int(ref)
    if 0 < ref <= _MAX_ID and session.scalar(select(albums.c.id).where(albums.c.id == ref)):
        return ref
    raise AlbumNotFound(detail=f"no album {ref}")


def _locked(session: Session, ref: int | str) -> int:
    """``_resolve``, with the album's row locked for this transaction (PostgreSQL): a
    concurrent removal of the album waits, or has happened and it is not found, never
    a foreign-key error halfway through."""
    album_id = _resolve(session, ref)
    if session.scalar(select(albums.c.id).where(albums.c.id == album_id).with_for_update()):
        return album_id
    raise AlbumNotFound(detail=f"no album {ref}")


def find_album(factory: sessionmaker[Session], ref: int | str) -> int:
    with read_session(factory) as session:
        return _resolve(session, ref)


@transactional
def create_album(factory: sessionmaker[Session], name: str) -> tuple[dict[str, Any], bool]:
    """The album of this name, made if there is none (whatever the case): the album and
    whether it is new."""
    spelled, key = normalise_name(name)
    now = utc_now()
    with write_session(factory) as session:
        made = session.scalar(
            insert_for(session, albums)
            .values(name=spelled, key=key, created_at=now, updated_at=now)
            .on_conflict_do_nothing(index_elements=["key"])
            .returning(albums.c.id)
        )
        album_id: int = (
            made
            if made is not None
            else session.execute(select(albums.c.id).where(albums.c.key == key)).scalar_one()
        )
        created = made is not None
        return _summaries(session, [album_id])[0], created


@transactional
def update_album(
    factory: sessionmaker[Session],
    ref: int | str,
    *,
    name: str | None = None,
    cover_asset_id: int | None = None,
) -> dict[str, Any]:
    """Rename the album or choose its cover (an asset in it)."""
    now = utc_now()
    with write_session(factory) as session:
        album_id = _locked(session, ref)
        values: dict[str, Any] = {}
        renamed: list[int] = []
        if name is not None:
            spelled, key = normalise_name(name)
            other = session.scalar(select(albums.c.id).where(albums.c.key == key))
            if other is not None and other != album_id:
                raise AlbumExists(detail=f"another album is named {spelled!r}", album=other)
            current = session.scalar(select(albums.c.name).where(albums.c.id == album_id))
            if current != spelled:
                values.update(name=spelled, key=key)
                # The album's name is part of each member's curation (its XMP) and
                # of its search words (refreshed once the new name is written).
                renamed = _members(session, album_id)
                touch(session, renamed, now, "albums")
        if cover_asset_id is not None:
            member = session.scalar(
                select(album_assets.c.asset_id).where(
                    album_assets.c.album_id == album_id,
                    album_assets.c.asset_id == cover_asset_id,
                )
            )
            if member is None:
                raise NotInAlbum(detail=f"asset {cover_asset_id} is not in album {album_id}")
            values["cover_asset_id"] = cover_asset_id
        if values:
            values["updated_at"] = now
            session.execute(update(albums).where(albums.c.id == album_id).values(values))
            search_index.refresh(session, renamed)
        return _summaries(session, [album_id])[0]


@transactional
def delete_album(factory: sessionmaker[Session], ref: int | str) -> dict[str, Any]:
    """Forget the album; its photos stay in the catalogue (and in other albums)."""
    now = utc_now()
    with write_session(factory) as session:
        album_id = _locked(session, ref)
        gone = _summaries(session, [album_id])[0]
        members = _members(session, album_id)
        touch(session, members, now, "albums")
        session.execute(delete(album_assets).where(album_assets.c.album_id == album_id))
        session.execute(delete(albums).where(albums.c.id == album_id))
        search_index.refresh(session, members)
    return gone


@transactional
def add_to_album(
    factory: sessionmaker[Session], ref: int | str, asset_ids: Iterable[int]
) -> tuple[dict[str, Any], Changed]:
    """Put the assets in the album; those already in it are unchanged."""
    now = utc_now()
    with write_session(factory) as session:
        album_id = _locked(session, ref)
        ids = checked_ids(session, asset_ids)
        had = _in(session, album_id, ids)
        outcome = Changed(
            changed=[i for i in ids if i not in had], unchanged=[i for i in ids if i in had]
        )
        for chunk in chunks(outcome.changed):
            session.execute(
                insert_for(session, album_assets)
                .values([{"album_id": album_id, "asset_id": i, "added_at": now} for i in chunk])
                .on_conflict_do_nothing(index_elements=["album_id", "asset_id"])
            )
        if outcome.changed:
            session.execute(update(albums).where(albums.c.id == album_id).values(updated_at=now))
        touch(session, outcome.changed, now, "albums")
        search_index.refresh(session, outcome.changed)  # album names are search words
        return _summaries(session, [album_id])[0], outcome


@transactional
def remove_from_album(
    factory: sessionmaker[Session], ref: int | str, asset_ids: Iterable[int]
) -> tuple[dict[str, Any], Changed]:
    """Take the assets out of the album (they stay in the catalogue); those not in it
    are unchanged. A cover taken out is no longer the cover."""
    now = utc_now()
    with write_session(factory) as session:
        album_id = _locked(session, ref)
        ids = checked_ids(session, asset_ids)
        had = _in(session, album_id, ids)
        outcome = Changed(
            changed=[i for i in ids if i in had], unchanged=[i for i in ids if i not in had]
        )
        for chunk in chunks(outcome.changed):
            session.execute(
                delete(album_assets).where(
                    album_assets.c.album_id == album_id, album_assets.c.asset_id.in_(chunk)
                )
            )
            session.execute(
                update(albums)
                .where(albums.c.id == album_id, albums.c.cover_asset_id.in_(chunk))
                .values(cover_asset_id=None)
            )
        if outcome.changed:
            session.execute(update(albums).where(albums.c.id == album_id).values(updated_at=now))
        touch(session, outcome.changed, now, "albums")
        search_index.refresh(session, outcome.changed)  # album names are search words
        return _summaries(session, [album_id])[0], outcome


def list_albums(factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    """Every album by name, each with its count, cover and date range."""
    with read_session(factory) as session:
        ids = list(session.scalars(select(albums.c.id).order_by(albums.c.key, albums.c.id)))
        return _summaries(session, ids)


def album(factory: sessionmaker[Session], ref: int | str) -> dict[str, Any]:
    with read_session(factory) as session:
        return _summaries(session, [_resolve(session, ref)])[0]


def albums_of(session: Session, asset_ids: list[int]) -> dict[int, list[dict[str, Any]]]:
    """Each asset's albums (``id``, ``name``), by name."""
    found: dict[int, list[dict[str, Any]]] = {}
    for chunk in chunks(sorted(set(asset_ids))):
        query = (
            select(album_assets.c.asset_id, albums.c.id, albums.c.name)
            .join(albums, albums.c.id == album_assets.c.album_id)
            .where(album_assets.c.asset_id.in_(chunk))
            .order_by(album_assets.c.asset_id, albums.c.key)
        )
        for asset_id, album_id, name in session.execute(query):
            found.setdefault(asset_id, []).append({"id": album_id, "name": name})
    return found


def _members(session: Session, album_id: int) -> list[int]:
    return list(
        session.scalars(select(album_assets.c.asset_id).where(album_assets.c.album_id == album_id))
    )


def _in(session: Session, album_id: int, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for chunk in chunks(ids):
        found.update(
            session.scalars(
                select(album_assets.c.asset_id).where(
                    album_assets.c.album_id == album_id, album_assets.c.asset_id.in_(chunk)
                )
            )
        )
    return found


def _summaries(session: Session, album_ids: list[int]) -> list[dict[str, Any]]:
    """``id``, ``name``, ``count``, ``cover_asset_id`` (chosen, else the first added),
    ``cover_chosen``,
    ``taken_from`` / ``taken_to`` (the local capture times of its earliest and latest
    photos, None when empty), ``created_at``, ``updated_at``; in the order given."""
    if not album_ids:
        return []
    found: dict[int, dict[str, Any]] = {}
    for chunk in chunks(album_ids):
        rows = session.execute(select(albums).where(albums.c.id.in_(chunk))).all()
        for row in rows:
            found[row.id] = {
                "id": row.id,
                "name": row.name,
                "cover_asset_id": row.cover_asset_id,
                "cover_chosen": row.cover_asset_id is not None,
                "created_at": row.created_at,
                "updated_at": row.updated_at,
                "count": 0,
                "taken_from": None,
                "taken_to": None,
            }
        ranges = session.execute(
            select(
                album_assets.c.album_id,
                func.count(),
                func.min(assets.c.taken_local),
                func.max(assets.c.taken_local),
            )
            .join(assets, assets.c.id == album_assets.c.asset_id)
            .where(album_assets.c.album_id.in_(chunk))
            .group_by(album_assets.c.album_id)
        ).all()
        for album_id, count, earliest, latest in ranges:
            found[album_id].update(count=count, taken_from=earliest, taken_to=latest)
        chosen_missing = [a for a in chunk if a in found and found[a]["cover_asset_id"] is None]
        for album_id in chosen_missing:
            # The first added; of several added at once, the earliest taken.
            found[album_id]["cover_asset_id"] = session.scalar(
                select(album_assets.c.asset_id)
                .join(assets, assets.c.id == album_assets.c.asset_id)
                .where(album_assets.c.album_id == album_id)
                .order_by(album_assets.c.added_at, assets.c.taken_local, assets.c.id)
                .limit(1)
            )
    return [found[a] for a in album_ids if a in found]
