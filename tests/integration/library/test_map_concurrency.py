"""Writers in two processes commit geotagged assets at once, into the same cells (the
world's, a region's, a street's): none fails and ``map_cells`` ends equal to a fresh
count of the assets (PostgreSQL's statement triggers, SQLite's row triggers)."""

from __future__ import annotations

import multiprocessing

from sqlalchemy import func, select

from photo_pipeline.db.schema import assets
from tests.integration.library.test_map_queries import assert_summary_counts
from tests.support.map_writers import commit_geotagged

SPAWN = multiprocessing.get_context("spawn")
BATCHES, SIZE = 6, 40


def test_two_processes_committing_geotagged_assets_keep_the_summary(db_url, session_factory):
    barrier = SPAWN.Barrier(2)
    results = SPAWN.Queue()
    procs = [
        SPAWN.Process(
            target=commit_geotagged, args=(db_url, barrier, results, first, BATCHES, SIZE)
        )
        for first in (1, 100_001)
    ]
    for proc in procs:
        proc.start()
    outcomes = [results.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    assert [detail for status, detail in outcomes if status == "error"] == []
    with session_factory() as session:
        kept = session.scalar(select(func.count()).select_from(assets))
    assert kept == 2 * BATCHES * (SIZE - 1)
    assert_summary_counts(session_factory)
