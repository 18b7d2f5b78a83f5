"""Renditions' rows: which asset has which rendition, made with which settings, and
the queries the render job and the API need. The files are ``pipeline.renditions.store``'s
(durable under their names before a row here names them).

For the API: :func:`rendition_file` gives the file of an asset's thumbnail or preview.
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy import and_, case, delete, func, select, union_all, update
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session, write_session
from photo_pipeline.db.dialect import insert_for
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, files, renditions, sources
from photo_pipeline.jobs.service import Clock, utc_now
from photo_pipeline.pipeline.files.roots import PathOutsideRoots, real_path_inside
from photo_pipeline.pipeline.library.catalog import PRESENT
from photo_pipeline.pipeline.library.home import STORE
from photo_pipeline.pipeline.renditions.store import RenderOutcome, StoredRendition

KINDS = ("thumbnail", "preview")
# media.render.FORMATS, without loading the decoders (the API serves these).
_MIME_TYPES = {"jpeg": "image/jpeg", "webp": "image/webp", "avif": "image/avif"}
_MARKER_CHUNK = 500  # asset ids per UPDATE of their renditions_fingerprint


class Renditions:
    """Rows of the ``renditions`` table and the queries the render job needs."""

    def __init__(self, session_factory: sessionmaker[Session], *, clock: Clock = utc_now) -> None:
        self._session_factory = session_factory
        self._clock = clock

    def to_render(self, fingerprint: str, *, force: bool = False) -> list[dict[str, Any]]:
        """Assets with a present file whose renditions are missing or were made with
        other settings (all of them with ``force``): id, content hash and the absolute
        path of one present file (the lowest file id). The stale ones are those whose
        ``renditions_fingerprint`` is not this one: ranges of its index, empty when
        there is nothing to do, whatever the library's size."""
        present = select(files.c.asset_id, func.min(files.c.id).label("file_id")).where(
            files.c.state == PRESENT, files.c.asset_id.is_not(None)
        )
        if not force:
            marker = assets.c.renditions_fingerprint
            # Three index ranges (not "IS DISTINCT FROM", which no index serves); the
            # files of the assets they give are then looked up by the files index.
            stale = union_all(
                select(assets.c.id).where(marker.is_(None)),
                select(assets.c.id).where(marker < fingerprint),
                select(assets.c.id).where(marker > fingerprint),
            )
            present = present.where(files.c.asset_id.in_(stale))
        first_file = present.group_by(files.c.asset_id).subquery()
        query = (
            select(
                assets.c.id,
                assets.c.content_hash,
                files.c.path,
                sources.c.path.label("source_path"),
            )
            .join(first_file, first_file.c.asset_id == assets.c.id)
            .join(files, files.c.id == first_file.c.file_id)
            .join(sources, sources.c.id == files.c.source_id)
            .order_by(assets.c.id)
        )
        with read_session(self._session_factory) as session:
            return [dict(row._mapping) for row in session.execute(query)]

    @transactional
    def record(self, outcomes: list[RenderOutcome], fingerprint: str) -> list[str]:
        """Record rendered assets in one transaction (re-recording changes nothing);
        returns the relative paths of files that no row points at any more."""
        with write_session(self._session_factory) as session:
            return self.record_in(session, outcomes, fingerprint)

    def record_in(
        self, session: Session, outcomes: list[RenderOutcome], fingerprint: str
    ) -> list[str]:
        """``record`` inside the caller's transaction (a render's fenced item write)."""
        done = [o for o in outcomes if o.error is None and o.renditions]
        if not done:
            return []
        now = self._clock()
        orphans: list[str] = []
        ids = sorted({o.asset_id for o in done})
        # Cleared first: the asset rows stay locked until the commit, so two writers
        # of one asset's renditions take turns, and the second sets the marker from
        # what the first committed.
        self._set_marker(session, ids, None)
        before = {
            (row.asset_id, row.kind): row.path
            for row in session.execute(
                select(renditions.c.asset_id, renditions.c.kind, renditions.c.path).where(
                    renditions.c.asset_id.in_(ids)
                )
            )
        }
        for outcome in done:
            for rendition in outcome.renditions:
                self._upsert(session, outcome, rendition, fingerprint, now)
                old = before.get((outcome.asset_id, rendition.kind))
                if old is not None and old != rendition.path:
                    orphans.append(old)  # another format: the old file goes
            if outcome.phash is not None:
                session.execute(
                    update(assets)
                    .where(assets.c.id == outcome.asset_id)
                    .values(phash=outcome.phash, updated_at=now)
                )
        self._set_marker(session, ids, fingerprint)
        return orphans

    @staticmethod
    def _set_marker(session: Session, asset_ids: list[int], fingerprint: str | None) -> None:
        """``assets.renditions_fingerprint`` of these assets: ``fingerprint`` where
        every kind's rendition was made with it, else NULL (None: NULL for all)."""
        if fingerprint is None:
            value: Any = None
        else:
            current = (
                select(func.count())
                .where(
                    renditions.c.asset_id == assets.c.id,
                    renditions.c.fingerprint == fingerprint,
                    renditions.c.kind.in_(KINDS),
                )
                .scalar_subquery()
            )
            value = case((current == len(KINDS), fingerprint), else_=None)
        for start in range(0, len(asset_ids), _MARKER_CHUNK):
            chunk = asset_ids[start : start + _MARKER_CHUNK]
            session.execute(
                update(assets).where(assets.c.id.in_(chunk)).values(renditions_fingerprint=value)
            )

    def _upsert(
        self,
        session: Session,
        outcome: RenderOutcome,
        rendition: StoredRendition,
        fingerprint: str,
        now: datetime,
    ) -> None:
        values = {
            "path": rendition.path,
            "format": rendition.format,
            "width": rendition.width,
            "height": rendition.height,
            "bytes": rendition.bytes,
            "fingerprint": fingerprint,
            "warning": outcome.warning,
            "created_at": now,
        }
        session.execute(
            insert_for(session, renditions)
            .values(asset_id=outcome.asset_id, kind=rendition.kind, **values)
            .on_conflict_do_update(index_elements=["asset_id", "kind"], set_=values)
        )

    def of_asset(self, asset_id: int) -> dict[str, dict[str, Any]]:
        """The renditions of one asset by kind (empty when none)."""
        query = select(renditions).where(renditions.c.asset_id == asset_id)
        with read_session(self._session_factory) as session:
            return {row.kind: dict(row._mapping) for row in session.execute(query)}

    def all(self) -> list[dict[str, Any]]:
        with read_session(self._session_factory) as session:
            query = select(renditions).order_by(renditions.c.asset_id, renditions.c.kind)
            return [dict(row._mapping) for row in session.execute(query)]

    @transactional
    def forget(self, asset_ids: list[int]) -> None:
        with write_session(self._session_factory) as session:
            session.execute(delete(renditions).where(renditions.c.asset_id.in_(asset_ids)))
            self._set_marker(session, sorted(set(asset_ids)), None)


def rendition_file(
    session_factory: sessionmaker[Session], home: Path, asset_id: int, kind: str
) -> dict[str, Any] | None:
    """The rendition ``kind`` ("thumbnail" or "preview") of an asset, for serving:
    ``{"path": Path, "mime": str, "width", "height", "bytes", "fingerprint"}`` (the
    fingerprint with the content hash makes a strong ETag), or None when the asset
    has no such rendition (yet) or its file is gone."""
    if kind not in KINDS:
        return None
    query = (
        select(renditions, assets.c.content_hash)
        .join(assets, assets.c.id == renditions.c.asset_id)
        .where(and_(renditions.c.asset_id == asset_id, renditions.c.kind == kind))
    )
    with read_session(session_factory) as session:
        row = session.execute(query).one_or_none()
    if row is None:
        return None
    # Re-checked at every request: a file of the store swapped for a symlink must not
    # serve what it points at.
    store = os.path.join(os.path.realpath(home), STORE)
    try:
        path = Path(real_path_inside(home / row.path, [store], "rendition"))
    except PathOutsideRoots:
        return None
    if not path.is_file():
        return None
    return {
        "path": path,
        "mime": _MIME_TYPES.get(row.format, "image/jpeg"),
        "width": row.width,
        "height": row.height,
        "bytes": row.bytes,
        "fingerprint": row.fingerprint,
        "content_hash": row.content_hash,
    }
