"""A process body for the map's concurrency test (spawned: importable by name): it
commits geotagged assets in several transactions, each a multi-row insert, a move of
some of them and a delete, into cells the other writers share."""

from __future__ import annotations

import random
import traceback
from datetime import UTC, datetime, timedelta

from sqlalchemy import delete, insert, update

from photo_pipeline.db import open_database, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline.library.map_grid import map_cell

NOW = datetime(2026, 1, 1, tzinfo=UTC)
# Shared by every writer: the world, Europe's cells at every level down to one street.
SPOTS = [(48.8566, 2.3522), (48.8606, 2.3376), (52.52, 13.405), (35.6895, 139.6917)]


def _row(asset_id: int, lat: float, lon: float) -> dict[str, object]:
    when = NOW - timedelta(days=asset_id % 3000)
    return {
        "id": asset_id,
        "content_hash": f"{asset_id:064x}",
        "size": 1000,
        "format": "jpeg",
        "mime": "image/jpeg",
        "width": 400,
        "height": 300,
        "orientation": 1,
        "taken_local": when.replace(tzinfo=None).isoformat(),
        "taken_utc": when,
        "taken_order": when,
        "taken_source": "exif_original",
        "gps_latitude": lat,
        "gps_longitude": lon,
        "map_cell": map_cell(lat, lon),
        "created_at": NOW,
        "updated_at": NOW,
    }


def commit_geotagged(url, barrier, results, first: int, batches: int, size: int) -> None:
    try:
        factory = open_database(url)
        rng = random.Random(first)

        @transactional
        def one_batch(start: int) -> None:
            with write_session(factory) as session:
                rows = []
                for n in range(size):
                    lat, lon = SPOTS[n % len(SPOTS)]
                    rows.append(_row(start + n, lat + rng.gauss(0, 0.01), lon + rng.gauss(0, 0.01)))
                session.execute(insert(assets).values(rows))
                lat, lon = SPOTS[rng.randrange(len(SPOTS))]
                session.execute(
                    update(assets)
                    .where(assets.c.id.between(start, start + size // 4))
                    .values(gps_latitude=lat, gps_longitude=lon, map_cell=map_cell(lat, lon))
                )
                session.execute(delete(assets).where(assets.c.id == start + size - 1))

        barrier.wait(timeout=120)
        for batch in range(batches):
            one_batch(first + batch * size)
        factory.kw["bind"].dispose()
        results.put(("ok", first))
    except Exception:  # reported to the test, which fails with it
        results.put(("error", traceback.format_exc()))
