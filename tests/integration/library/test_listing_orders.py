"""Every order of the asset listing is a keyset walk of one index: a deep page of
`sort=taken` (local wall clock) or `sort=added` reads a page, not every asset sorted."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import bindparam, select, update

from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline.library.browse import (
    AssetFilter,
    Browser,
    _filtered,
    _has_present_file,
)
from photo_pipeline.pipeline.library.ordering import Order
from tests.integration.library.test_scale_queries import analyze, plan
from tests.support.catalogue_rows import add_assets


@pytest.fixture
def big(session_factory):
    rng = random.Random(3)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(3000)])
    # Local clocks out of the instants' order: asset n is shown at 2015 + (3000 - n) days.
    rows = [
        {"asset": n, "local": f"{2015 + (3000 - n) // 365:04d}-01-01T{n % 24:02d}:00:00"}
        for n in range(1, 3001)
    ]
    with session_factory.begin() as session:
        session.execute(
            update(assets)
            .where(assets.c.id == bindparam("asset"))
            .values(taken_local=bindparam("local")),
            rows,
        )
    analyze(session_factory)
    return session_factory


@pytest.mark.parametrize("sort", ["taken", "added", "taken-utc"])
def test_paging_each_order_visits_every_asset_once_in_that_order(big, sort):
    browser = Browser(big)
    seen, cursor = [], None
    while True:
        page, cursor = browser.asset_page(AssetFilter(), cursor=cursor, limit=250, sort=sort)
        seen += page
        if cursor is None:
            break
    assert len({a["id"] for a in seen}) == len(seen) == 3000
    order = Order(sort)
    keys = [order.key({**a, "taken_order": a["taken_utc"]}) for a in seen]
    assert keys == (sorted(keys, reverse=True) if sort == "added" else sorted(keys))


@pytest.mark.parametrize(
    ("sort", "index"), [("taken", "ix_assets_taken_local_id"), ("added", "PRIMARY KEY")]
)
def test_a_deep_page_of_each_order_is_a_range_of_its_index(big, sort, index):
    order = Order(sort)
    key = ("2016-01-01T00:00:00", 2000) if sort == "taken" else (1000,)
    deep = (
        _filtered(select(assets.c.id), AssetFilter(), sort=sort)
        .where(_has_present_file())
        .where(order.after(key))
        .order_by(*order.columns)
        .limit(101)
    )
    shown = plan(big, deep)
    if big.kw["bind"].dialect.name == "sqlite":
        assert index in shown, shown
        assert "TEMP B-TREE" not in shown, shown  # no sort of every asset
    else:
        assert "Seq Scan on assets" not in shown, shown
        assert "Sort" not in shown.split("Limit")[1].split("SubPlan")[0], shown
