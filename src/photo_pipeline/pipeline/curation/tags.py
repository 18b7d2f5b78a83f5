"""Tags (keywords) on assets. A tag may be hierarchical, its levels joined by "|"
(``Places|France|Paris``, as Lightroom's hierarchicalSubject writes them): a parent
(``Places|France``) matches its children in filters. Tags are one whatever their case
(the first spelling is kept); a tag no asset carries any more is no longer listed (its
row stays: deleting it could race a concurrent ``add_tag`` and cascade its new link
away)."""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, delete, exists, func, or_, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import asset_tags, assets, tags
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import utc_now
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.curation.assets import checked_ids, chunks
from photo_pipeline.pipeline.curation.changes import touch
from photo_pipeline.pipeline.curation.marks import Changed
from photo_pipeline.pipeline.curation.names import has_unprintable, name_key

SEPARATOR = "|"
MAX_TAG_LENGTH = 500  # the column's width, for the spelling and its casefolded key
MAX_LEVEL_LENGTH = 100


class InvalidTag(PhotoPipelineError):
    code = "invalid_tag"
    status = 422


class TagNotFound(PhotoPipelineError):
    code = "tag_not_found"
    status = 404


def normalise_tag(text: str) -> tuple[str, str]:
    """The tag ``text`` names, as stored: its spelling (levels stripped of surrounding
    space, inner runs of space made one) and its key (casefolded, NFC). ``InvalidTag``
    for an empty level, a control character or a tag too long."""
    if not isinstance(text, str):
        raise InvalidTag(detail="a tag is text")
    levels = [" ".join(level.split()) for level in unicodedata.normalize("NFC", text).split("|")]
    if not any(levels):
        raise InvalidTag(detail="a tag cannot be empty")
    if not all(levels):
        raise InvalidTag(detail=f"{text!r}: every level between '|' needs a name")
    if has_unprintable("".join(levels)):
        raise InvalidTag(detail=f"{text!r}: a tag has no control or unassigned characters")
    if any(len(level) > MAX_LEVEL_LENGTH for level in levels):
        raise InvalidTag(detail=f"each level of a tag is at most {MAX_LEVEL_LENGTH} characters")
    path = SEPARATOR.join(levels)
    key = name_key(path)
    if len(path) > MAX_TAG_LENGTH or len(key) > MAX_TAG_LENGTH:
        raise InvalidTag(detail=f"a tag is at most {MAX_TAG_LENGTH} characters")
    return path, key


def _like_escaped(text: str) -> str:
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def subtree(key: str) -> Any:
    """The ids of the tag ``key`` and of every tag below it (a scan of the tags, a
    short table, run once per query)."""
    return select(tags.c.id).where(
        or_(tags.c.key == key, tags.c.key.like(_like_escaped(key + SEPARATOR) + "%", escape="\\"))
    )


def tagged(text: str) -> ColumnElement[bool]:
    """The listing condition: the asset carries the tag ``text`` or one below it (a
    probe of the asset's own tags by primary key)."""
    _, key = normalise_tag(text)
    return exists().where(
        asset_tags.c.asset_id == assets.c.id, asset_tags.c.tag_id.in_(subtree(key))
    )


@transactional
def add_tag(factory: sessionmaker[Session], text: str, asset_ids: Iterable[int]) -> Changed:
    """Put the tag on the assets; those that had it are unchanged."""
    path, key = normalise_tag(text)
    now = utc_now()
    with write_session(factory) as session:
        ids = checked_ids(session, asset_ids)
        session.execute(
            insert_for(session, tags)
            .values(path=path, key=key, created_at=now)
            .on_conflict_do_nothing(index_elements=["key"])
        )
        tag_id: int = session.execute(select(tags.c.id).where(tags.c.key == key)).scalar_one()
        had = _carrying(session, tag_id, ids)
        outcome = Changed(
            changed=[i for i in ids if i not in had], unchanged=[i for i in ids if i in had]
        )
        for chunk in chunks(outcome.changed):
            session.execute(
                insert_for(session, asset_tags)
                .values([{"asset_id": i, "tag_id": tag_id, "tagged_at": now} for i in chunk])
                .on_conflict_do_nothing(index_elements=["asset_id", "tag_id"])
            )
        touch(session, outcome.changed, now, "tags")
        search_index.refresh(session, outcome.changed)  # a tag's levels are search words
    return outcome


@transactional
def remove_tag(factory: sessionmaker[Session], text: str, asset_ids: Iterable[int]) -> Changed:
    """Take the tag (exactly this one, not its children) off the assets; those without
    it are unchanged (so a repeat changes nothing). ``TagNotFound`` for a tag never
    put on any asset (a misspelling, most likely)."""
    path, key = normalise_tag(text)
    now = utc_now()
    with write_session(factory) as session:
        ids = checked_ids(session, asset_ids)
        tag_id = session.scalar(select(tags.c.id).where(tags.c.key == key))
        if tag_id is None:
            raise TagNotFound(detail=f"no tag {path!r}")
        had = _carrying(session, tag_id, ids)
        outcome = Changed(
            changed=[i for i in ids if i in had], unchanged=[i for i in ids if i not in had]
        )
        for chunk in chunks(outcome.changed):
            session.execute(
                delete(asset_tags).where(
                    asset_tags.c.tag_id == tag_id, asset_tags.c.asset_id.in_(chunk)
                )
            )
        touch(session, outcome.changed, now, "tags")
        search_index.refresh(session, outcome.changed)  # a tag's levels are search words
    return outcome


def _carrying(session: Session, tag_id: int, ids: list[int]) -> set[int]:
    found: set[int] = set()
    for chunk in chunks(ids):
        found.update(
            session.scalars(
                select(asset_tags.c.asset_id).where(
                    asset_tags.c.tag_id == tag_id, asset_tags.c.asset_id.in_(chunk)
                )
            )
        )
    return found


def list_tags(factory: sessionmaker[Session]) -> list[dict[str, Any]]:
    """Every tag by its key (so children follow their parent): ``id``, ``path``,
    ``name`` (its last level), ``parent`` (the path above, or None), ``depth`` (0 at the
    top) and ``count`` (the assets carrying exactly it)."""
    query = (
        select(tags.c.id, tags.c.path, func.count(asset_tags.c.asset_id).label("count"))
        .join(asset_tags, asset_tags.c.tag_id == tags.c.id, isouter=True)
        .group_by(tags.c.id, tags.c.path, tags.c.key)
        .having(func.count(asset_tags.c.asset_id) > 0)
        .order_by(tags.c.key)
    )
    with read_session(factory) as session:
        rows = session.execute(query).all()
    listed = []
    for row in rows:
        levels = row.path.split(SEPARATOR)
        listed.append(
            {
                "id": row.id,
                "path": row.path,
                "name": levels[-1],
                "parent": SEPARATOR.join(levels[:-1]) or None,
                "depth": len(levels) - 1,
                "count": row.count,
            }
        )
    return listed


def tags_of(session: Session, asset_ids: list[int]) -> dict[int, list[str]]:
    """Each asset's tags (their spelling), by key."""
    found: dict[int, list[str]] = {}
    for chunk in chunks(sorted(set(asset_ids))):
        query = (
            select(asset_tags.c.asset_id, tags.c.path)
            .join(tags, tags.c.id == asset_tags.c.tag_id)
            .where(asset_tags.c.asset_id.in_(chunk))
            .order_by(asset_tags.c.asset_id, tags.c.key)
        )
        for asset_id, path in session.execute(query):
            found.setdefault(asset_id, []).append(path)
    return found
