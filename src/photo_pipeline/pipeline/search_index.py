"""The search index: one row of words per asset (``asset_search.document``), and the
condition that an asset matches a search, in the shape each database answers fast.

The document is the asset's words, folded here in Python (case and accents dropped,
split at anything not a letter or digit) so that SQLite and PostgreSQL see the same
plain words: its present files' names, camera make and model as the file says them
and as people read them (``media.camera_names``), lens, place (city, district,
region, country and its code), and the names of its tags (every level of
``Places|France``) and albums.

- SQLite: an FTS5 table with ``asset_search`` as its external content (migration
  0024), kept in step by triggers on ``asset_search``, with prefix indexes;
- PostgreSQL: a GIN index on ``to_tsvector('simple', document)``.

Each word typed matches as a prefix ("pari" finds Paris); all must match. ``matching``
asks the text index first (once per session), for at most ``FEW`` + 1 assets: that few
are listed by id; more are tested one by one along the listing's own index (on SQLite,
up to ``SET_MAX`` of them, against the set of matches; else by ``asset_search``'s key),
so a page costs about the same in a large library as in a small one.

``refresh`` rewrites the documents of assets whose words may have changed; the
writers call it in their transaction (``catalog.record``: a file read or gone;
``catalog.placed``: organize moved one; ``ingest.places``: a place found;
``curation.tags`` and ``curation.albums``: a tag put on or taken off, an album's
members, name or removal). This module sits beside the catalogue, not in it, and
imports neither it nor curation, so both can call it: the catalogue's listings read
curation's filters, and curation writes documents.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

from sqlalchemy import ColumnElement, Integer, column, delete, literal, select, text
from sqlalchemy.orm import Session

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import (
    album_assets,
    albums,
    asset_search,
    asset_tags,
    assets,
    files,
    tags,
)
from photo_pipeline.media.camera_names import display_make, display_model
from photo_pipeline.pipeline.file_states import PRESENT
from photo_pipeline.pipeline.files.paths import display

# A search reads at most this many words: each is one more term of the index's query.
MAX_WORDS = 16
_WORD = re.compile(r"[^\W_]+")
_CHUNK = 500


def words(text: str) -> list[str]:
    """``text`` as the index's words: NFKD with combining marks dropped, case-folded,
    split at anything but letters and digits (``IMG_0042.JPG`` → img, 0042, jpg)."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _WORD.findall(unicodedata.normalize("NFC", bare))


def document(asset: Any, file_names: Iterable[str], labels: Iterable[str] = ()) -> str:
    """The searchable words of one asset row (its columns by name), its files' names
    and its ``labels`` (its tags' paths and albums' names)."""
    parts: list[str | None] = [
        *file_names,
        asset.make,
        asset.model,
        display_make(asset.make, asset.model),
        display_model(asset.make, asset.model),
        asset.lens,
        asset.city,
        asset.district,
        asset.region,
        asset.country,
        asset.country_code,
        *labels,
    ]
    seen: dict[str, None] = {}
    for part in parts:
        for word in words(part or ""):
            seen.setdefault(word, None)
    return " ".join(seen)


_DOCUMENT_COLUMNS = (
    assets.c.id,
    assets.c.make,
    assets.c.model,
    assets.c.lens,
    assets.c.city,
    assets.c.district,
    assets.c.region,
    assets.c.country,
    assets.c.country_code,
)


def refresh(session: Session, asset_ids: Iterable[int | None]) -> None:
    """Rewrite the search documents of these assets (gone ones lose theirs), in the
    caller's transaction."""
    wanted = sorted({a for a in asset_ids if a is not None})
    for start in range(0, len(wanted), _CHUNK):
        chunk = wanted[start : start + _CHUNK]
        names: dict[int, list[str]] = {}
        for asset_id, path in session.execute(
            select(files.c.asset_id, files.c.path)
            .where(files.c.asset_id.in_(chunk), files.c.state == PRESENT)
            .order_by(files.c.id)
        ):
            names.setdefault(asset_id, []).append(PurePosixPath(display(path)).name)
        labels: dict[int, list[str]] = {}
        for asset_id, label in session.execute(
            select(asset_tags.c.asset_id, tags.c.path)
            .join(tags, tags.c.id == asset_tags.c.tag_id)
            .where(asset_tags.c.asset_id.in_(chunk))
            .union_all(
                select(album_assets.c.asset_id, albums.c.name)
                .join(albums, albums.c.id == album_assets.c.album_id)
                .where(album_assets.c.asset_id.in_(chunk))
            )
        ):
            labels.setdefault(asset_id, []).append(label)
        rows = session.execute(select(*_DOCUMENT_COLUMNS).where(assets.c.id.in_(chunk))).all()
        session.execute(delete(asset_search).where(asset_search.c.asset_id.in_(chunk)))
        if rows:
            session.execute(
                asset_search.insert(),
                [
                    {
                        "asset_id": row.id,
                        "document": document(
                            row, names.get(row.id, ()), sorted(labels.get(row.id, ()))
                        ),
                    }
                    for row in rows
                ],
            )


def rebuild(session: Session, *, chunk: int = 5000) -> int:
    """Every asset's search document written afresh (after a bulk load of the
    catalogue, or to replace documents of an older shape), ``chunk`` assets a
    statement, in the caller's transaction; returns how many assets it read."""
    session.execute(delete(asset_search))
    after, done = 0, 0
    while True:
        ids = list(
            session.scalars(
                select(assets.c.id).where(assets.c.id > after).order_by(assets.c.id).limit(chunk)
            )
        )
        if not ids:
            return done
        refresh(session, ids)
        after, done = ids[-1], done + len(ids)


# A search matching at most this many assets (found through the database's text index)
# lists them by id: a page sorts these few, and a sampled total (``Browser.asset_total``)
# cuts them to each sample's ids. One matching more walks the listing's own index, so a
# page stops after ``limit`` matches (about limit * N / matches assets walked, N the
# library's size), and tests each asset walked:
# - on SQLite, matching at most ``SET_MAX``: against the set of matches, which the
#   query reads once from the FTS5 index into an in-memory index (probed by the id the
#   listing's index entry holds: an asset that misses costs no row read);
# - else by its document, read by key (few are walked: at most about limit * N / FEW).
# On PostgreSQL, a set of matches written out as constants (hashed there) was tried:
# planning and sending the list cost more than the checks it saved (bench.scale, 300k).
FEW = 2000
SET_MAX = 20_000


def _probed(session: Session, joined: str) -> list[int] | None:
    """The assets matching ``joined`` from the text index when they are at most
    ``FEW`` (None: more), asked once per session (a sampled total asks for each of its
    samples)."""
    cache: dict[tuple[str, int, int], list[int] | None] = session.info.setdefault(
        "search_matches", {}
    )
    key = (joined, FEW, SET_MAX)
    if key in cache:
        return cache[key]
    if is_postgresql(session):
        few = (
            "SELECT asset_id FROM asset_search "
            f"WHERE to_tsvector('simple', document) @@ {_PG_QUERY}"
        )
    else:
        few = f"SELECT rowid FROM asset_search_fts WHERE asset_search_fts MATCH {_SQLITE_QUERY}"
    found = list(session.scalars(text(f"{few} LIMIT {FEW + 1}"), {"words": joined}))
    cache[key] = None if len(found) > FEW else sorted(found)
    if cache[key] is None and not is_postgresql(session):
        # How many more (up to SET_MAX): the FTS5 index's rowids only.
        many = session.scalar(
            text(f"SELECT count(*) FROM ({few} LIMIT {SET_MAX + 1})"), {"words": joined}
        )
        session.info.setdefault("search_many", {})[key] = many
    return cache[key]


def _checked(search_words: Iterable[str]) -> str:
    terms = list(search_words)[:MAX_WORDS]
    if not terms or any(not _WORD.fullmatch(t) for t in terms):
        raise ValueError(f"not index words: {terms!r}")
    return " ".join(terms)


# The query text each database's index takes, built in SQL from the bound words
# (letters and digits only, as ``words`` makes them, so no word is query syntax): each
# word a prefix, all of them. FTS5: "w1"* "w2"*; PostgreSQL: w1:* & w2:*.
_SQLITE_QUERY = """'"' || replace(:words, ' ', '"* "') || '"*'"""
_PG_QUERY = "to_tsquery('simple', replace(:words, ' ', ':* & ') || ':*')"


def matching(
    session: Session, search_words: Iterable[str], *, within: tuple[int, int] | None = None
) -> ColumnElement[bool]:
    """The condition that an asset has every one of ``search_words`` as a prefix of
    one of its words, in the shape that costs least for how many match (``FEW``);
    ``within``: the caller reads only assets of this id range (a sampled
    total), so a known set of matches is cut to it."""
    joined = _checked(search_words)
    found = _probed(session, joined)
    if found is not None and within is not None:
        low, high = within
        return assets.c.id.in_([a for a in found if low <= a <= high])
    if found is not None:
        return assets.c.id.in_(found)
    many = session.info.get("search_many", {}).get((joined, FEW, SET_MAX))
    if many is not None and many <= SET_MAX:
        # ``id + 0``: the listing's index stays the walk (the set is only probed).
        members = (
            text(f"SELECT rowid FROM asset_search_fts WHERE asset_search_fts MATCH {_SQLITE_QUERY}")
            .bindparams(words=joined)
            .columns(column("rowid", Integer))
        )
        return (assets.c.id + 0).in_(members)
    # Each word a prefix of a word of the document (its words are joined by spaces and,
    # like the search words, hold letters and digits only: nothing in them is a LIKE
    # wildcard). A key lookup and a short LIKE per asset checked.
    # A scalar subquery, not EXISTS: PostgreSQL would turn EXISTS into a join that reads
    # every document, where a page needs a short walk with a key lookup per asset.
    spaced = literal(" ") + asset_search.c.document
    checked = (
        select(asset_search.c.asset_id)
        .where(
            asset_search.c.asset_id == assets.c.id,
            *(spaced.like(f"% {word}%") for word in joined.split(" ")),
        )
        .correlate(assets)
        .scalar_subquery()
    )
    return checked.is_not(None)
