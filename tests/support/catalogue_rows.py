"""Catalogue rows written straight into the tables, thousands at a time, for the tests
of queries and grouping at scale (no files, no scan): assets with chosen pHashes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, insert, select

from photo_pipeline.db.schema import assets, files, sources

NOW = datetime(2026, 1, 1, tzinfo=UTC)
START = datetime(2015, 1, 1, tzinfo=UTC)


def add_assets(
    factory, hashes: list[int], *, first: int = 1, copies: int = 0, when: datetime = NOW
) -> list[int]:
    """Assets ``first..`` with these pHashes, one present file each (``copies``: the
    first ones get a second file), captures a day apart, written at ``when``;
    resolutions vary so that keepers differ."""
    ids = list(range(first, first + len(hashes)))
    with factory.begin() as session:
        if session.scalar(select(func.count()).select_from(sources)) == 0:
            session.execute(insert(sources).values(id=1, path="/photos", added_at=NOW))
        session.execute(
            insert(assets),
            [
                {
                    "id": asset_id,
                    "content_hash": f"{asset_id:064x}",
                    "size": 1000,
                    "format": "jpeg",
                    "mime": "image/jpeg",
                    "width": 4000 - asset_id % 7,
                    "height": 3000,
                    "orientation": 1,
                    "taken_local": (START + timedelta(days=asset_id))
                    .replace(tzinfo=None)
                    .isoformat(),
                    "taken_utc": START + timedelta(days=asset_id),
                    "taken_order": START + timedelta(days=asset_id),
                    "taken_source": "exif_original",
                    "make": "Canon" if asset_id % 10 == 0 else "Other",
                    "phash": f"{value:016x}",
                    "created_at": when,
                    "updated_at": when,
                }
                for asset_id, value in zip(ids, hashes, strict=True)
            ],
        )
        session.execute(
            insert(files),
            [
                {
                    "source_id": 1,
                    "path": f"{asset_id}-{copy}.jpg",
                    "size": 1000,
                    "mtime_ns": 0,
                    "inode": asset_id * 2 + copy,
                    "state": "present",
                    "asset_id": asset_id,
                    "created_at": when,
                    "updated_at": when,
                }
                for n, asset_id in enumerate(ids)
                for copy in range(2 if n < copies else 1)
            ],
        )
    return ids
