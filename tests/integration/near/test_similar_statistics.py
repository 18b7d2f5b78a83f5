"""After a full regroup, PostgreSQL has statistics on the near-duplicate tables at
once (its planner reads a page of near groups by index only with them; autovacuum
would gather them a minute or so later)."""

from __future__ import annotations

import random
from datetime import timedelta

import pytest
from sqlalchemy import text

from photo_pipeline.db import open_database
from photo_pipeline.db.dialect import engine_of
from photo_pipeline.pipeline.near.similar import regroup
from tests.conftest import make_database_url
from tests.support.catalogue_rows import NOW, add_assets


@pytest.fixture
def pg_factory(tmp_path):
    for url in make_database_url("postgresql", tmp_path):  # skips (fails under CI) without
        factory = open_database(url)
        yield factory
        engine_of(factory).dispose()


@pytest.mark.postgres
def test_a_full_regroup_leaves_the_planner_statistics_of_its_tables(pg_factory):
    rng = random.Random(5)
    base = [rng.getrandbits(64) for _ in range(300)]
    add_assets(pg_factory, base + [value ^ 1 for value in base[:40]])  # 40 near pairs
    done = regroup(pg_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    assert done.mode == "full" and done.groups >= 40
    with pg_factory() as session:
        for table in ("near_pairs", "near_duplicates", "near_chunks"):
            rows = session.scalar(text(f"SELECT count(*) FROM {table}"))
            # reltuples is -1 until a table is first analyzed (PostgreSQL 14+)
            estimated = session.scalar(
                text(f"SELECT reltuples FROM pg_class WHERE oid = '{table}'::regclass")
            )
            assert rows > 0 and estimated == rows, table
