"""The curation filters keep a listing page a walk of the listing's own index with a
keyset cursor: each filter is a probe by primary key, never a sort of every match."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import select, text

from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline.curation import (
    CurationFilter,
    RatingRange,
    add_tag,
    add_to_album,
    create_album,
    set_favorite,
    set_rating,
)
from photo_pipeline.pipeline.library.browse import (
    AssetFilter,
    Browser,
    _filtered,
    _has_present_file,
)
from tests.integration.library.test_scale_queries import analyze, plan
from tests.support.catalogue_rows import add_assets

FILTERS = {
    "album": lambda album: CurationFilter(album=album),
    "tag": lambda _: CurationFilter(tag="Places|France"),
    "rating": lambda _: CurationFilter(rating=RatingRange(4, 5)),
    "unrated": lambda _: CurationFilter(rating=RatingRange(0, 2)),
    "favorite": lambda _: CurationFilter(favorite=True, rejected=False),
}


@pytest.fixture
def curated(session_factory):
    rng = random.Random(7)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(3000)])
    every = list(range(1, 3001))
    half = every[::2]
    set_rating(session_factory, half, 4)
    set_favorite(session_factory, every[::3], True)
    add_tag(session_factory, "Places|France|Paris", every[::4])
    album, _ = create_album(session_factory, "Half")
    add_to_album(session_factory, album["id"], half)
    analyze(session_factory)
    return album["id"]


@pytest.mark.parametrize("name", FILTERS)
def test_a_filtered_page_walks_the_listing_index(session_factory, curated, name):
    where = AssetFilter(curation=FILTERS[name](curated))
    query = (
        _filtered(select(assets.c.id), where)
        .where(_has_present_file())
        .where(text("(assets.taken_order, assets.id) > (:o, 200)").bindparams(o=10**15))
        .order_by(assets.c.taken_order, assets.c.id)
        .limit(101)
    )
    shown = plan(session_factory, query)
    if session_factory.kw["bind"].dialect.name == "sqlite":
        assert "ix_assets_taken_order_id" in shown, shown
        assert "TEMP B-TREE" not in shown, shown  # no sort of every match
    else:
        assert "Seq Scan on assets" not in shown, shown
        assert "Sort" not in shown.split("Limit")[1].split("SubPlan")[0], shown

    # And paging by cursor finds every match once.
    browser = Browser(session_factory)
    found, cursor = [], None
    while True:
        page, cursor = browser.asset_page(where, cursor=cursor, limit=250)
        found += [row["id"] for row in page]
        if cursor is None:
            break
    assert len(found) == len(set(found)) > 0
    assert browser.asset_total(where) == (len(found), True)
