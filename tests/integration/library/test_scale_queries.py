"""Listings that stay flat as the library grows: the query plans use the indexes
(a deep page, jobs by type and state), duplicate groups page by cursor exactly once
even while groups are added, and `similar` pairs only what changed."""

from __future__ import annotations

import random
from datetime import date, timedelta

import pytest
from sqlalchemy import func, insert, select, text, update
from sqlalchemy.orm import sessionmaker

from photo_pipeline.db import create_database_engine
from photo_pipeline.db.migrate import upgrade
from photo_pipeline.db.schema import assets, files, jobs, near_duplicates, renditions, sources
from photo_pipeline.pipeline.dedupe.plan import exact_keepers, organized_destinations
from photo_pipeline.pipeline.library import keeper
from photo_pipeline.pipeline.library.browse import (
    AssetFilter,
    Browser,
    _filtered,
    _has_present_file,
)
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near.similar import (
    _replace_groups,
    find_groups,
    near_group_page,
    regroup,
)
from photo_pipeline.pipeline.renditions.rows import KINDS, Renditions
from photo_pipeline.pipeline.renditions.store import RenderOutcome, StoredRendition
from tests.support.api_server import running_server
from tests.support.catalogue_rows import NOW, add_assets


def analyze(factory) -> None:
    with factory.begin() as session:
        session.execute(text("ANALYZE"))


def plan(factory, query) -> str:
    engine = factory.kw["bind"]
    sql = str(query.compile(engine, compile_kwargs={"literal_binds": True}))
    prefix = "EXPLAIN QUERY PLAN " if engine.dialect.name == "sqlite" else "EXPLAIN "
    with engine.connect() as conn:
        return "\n".join(str(row[-1]) for row in conn.execute(text(prefix + sql)))


def test_a_deep_page_is_a_range_of_the_listing_index(session_factory):
    rng = random.Random(1)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(3000)], copies=300)
    analyze(session_factory)
    browser = Browser(session_factory)
    cursor = None
    for _ in range(20):
        _, cursor = browser.asset_page(AssetFilter(), cursor=cursor, limit=100)
    page, _ = browser.asset_page(AssetFilter(), cursor=cursor, limit=100)
    assert [a["id"] for a in page] == list(range(2001, 2101))
    assert [a["files"] for a in page] == [1] * 100

    deep = (
        _filtered(select(assets.c.id), AssetFilter())
        .where(_has_present_file())
        .where(text("(assets.taken_order, assets.id) > (:o, 2000)").bindparams(o=10**15))
        .order_by(assets.c.taken_order, assets.c.id)
        .limit(101)
    )
    shown = plan(session_factory, deep)
    if session_factory.kw["bind"].dialect.name == "sqlite":
        assert "ix_assets_taken_order_id" in shown, shown
        assert "TEMP B-TREE" not in shown, shown  # no sort of every asset
        assert "ix_files_asset_id_state" in shown, shown
    else:
        assert "Seq Scan on assets" not in shown, shown
        assert "Sort" not in shown.split("Limit")[1].split("SubPlan")[0], shown

    # Two years of captures: a range of the listing index, not every match sorted.
    years = AssetFilter(taken_from=date(2016, 1, 1), taken_to=date(2017, 12, 31))
    page, _ = browser.asset_page(years, limit=100)
    assert page[0]["taken_local"].startswith("2016-01-01") and len(page) == 100
    ranged = (
        _filtered(select(assets.c.id), years)
        .where(_has_present_file())
        .order_by(assets.c.taken_order, assets.c.id)
        .limit(101)
    )
    shown = plan(session_factory, ranged)
    if session_factory.kw["bind"].dialect.name == "sqlite":
        assert "ix_assets_taken_order_id" in shown and "TEMP B-TREE" not in shown, shown
    else:  # the range of the index, if not always in its order
        assert "ix_assets_taken_order_id" in shown and "Seq Scan on assets" not in shown, shown


def test_totals_are_exact_when_small_and_estimated_beyond(session_factory):
    rng = random.Random(2)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(6000)])
    browser = Browser(session_factory)
    total, exact = browser.asset_total(AssetFilter())
    assert not exact and 5000 <= total <= 7000
    cameras, exact = browser.asset_total(AssetFilter(camera="canon"))
    assert not exact and 400 <= cameras <= 800
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id > 100).values(state="missing"))
        session.execute(assets.delete().where(assets.c.id > 4000))
    assert browser.asset_total(AssetFilter()) == (100, True)
    assert browser.asset_total(AssetFilter(camera="canon")) == (10, True)


@pytest.mark.parametrize("column", ["job_type", "state"])
def test_jobs_by_type_or_state_walk_an_index(session_factory, column):
    with session_factory.begin() as session:
        session.execute(
            insert(jobs),
            [
                {
                    "id": f"{n:036d}",
                    # A rare type and a rare state: walking every job would find
                    # a page of them only at the end.
                    "job_type": "verify" if n % 200 == 0 else ("scan", "render")[n % 2],
                    "state": "failed" if n % 200 == 1 else "succeeded",
                    "priority": 0,
                    "params": {},
                    "request_hash": "x",
                    "waiting_for": 0,
                    "attempts": 1,
                    "max_attempts": 3,
                    "run_after": NOW,
                    "fencing_token": 1,
                    "version": 1,
                    "created_at": NOW,
                    "updated_at": NOW,
                    "finished_at": NOW,
                }
                for n in range(4000)
            ],
        )
    analyze(session_factory)
    value = "verify" if column == "job_type" else "failed"
    query = select(jobs.c.id).where(jobs.c[column] == value).order_by(jobs.c.seq.desc()).limit(51)
    shown = plan(session_factory, query)
    index = f"ix_jobs_{column}_seq"
    assert index in shown, shown


def job_row(n: int, job_type: str, params: object) -> dict:
    return {
        "id": f"{n:036d}",
        "job_type": job_type,
        "state": "succeeded",
        "priority": 0,
        "params": params,
        "request_hash": "x",
        "waiting_for": 0,
        "attempts": 1,
        "max_attempts": 3,
        "run_after": NOW,
        "fencing_token": 1,
        "version": 1,
        "created_at": NOW,
        "updated_at": NOW,
        "finished_at": NOW,
    }


def test_organized_destinations_are_picked_out_by_the_database(session_factory):
    """The destinations the database picks out are those the keeper rules used to
    read from every organize job's parameters; a copy inside one is kept."""
    params = [
        {"destination": "/organized/"},
        {"destination": "/organized/"},
        {"destination": '/d\u00e9j\u00e0 "vu"'},
        {"destination": ""},
        {"move": True},
        {},
    ]
    with session_factory.begin() as session:
        session.execute(
            insert(jobs),
            [job_row(n, "organize", p) for n, p in enumerate(params)]
            + [job_row(99, "dedupe", {"destination": "/not-organized"})],
        )
    with session_factory() as session:
        found = organized_destinations(session)
        # What the keeper rules read before: every organize job's parameters, in Python.
        read = {
            p["destination"]
            for p in session.scalars(select(jobs.c.params).where(jobs.c.job_type == "organize"))
            if isinstance(p, dict) and p.get("destination")
        }
    assert found == sorted(read) == ['/d\u00e9j\u00e0 "vu"', "/organized/"]

    add_assets(session_factory, [1, 2], copies=2)
    with session_factory.begin() as session:
        session.execute(insert(sources).values(id=2, path="/organized/2015", added_at=NOW))
        session.execute(files.update().where(files.c.path == "1-1.jpg").values(source_id=2))
    kept = exact_keepers(session_factory, [1, 2])
    assert kept[1] == ("/organized/2015/1-1.jpg", keeper.ORGANIZED)
    assert kept[2][1] != keeper.ORGANIZED


def group_keys(pages) -> list[int]:
    return [g["keeper"] for page in pages for g in page]


def test_near_groups_page_each_group_once_while_groups_are_added(session_factory):
    rng = random.Random(3)
    ids = add_assets(session_factory, [rng.getrandbits(64) for _ in range(60)])
    # Groups of two: (1, 2), (3, 4), ... (41, 42); and one member whose file vanished.
    _replace_groups(
        session_factory,
        [[{"id": a, "distance": 0}, {"id": a + 1, "distance": 3}] for a in ids[:42:2]],
    )
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id == 6).values(state="missing"))
    seen, after, pages = [], 0, 0
    while after is not None:
        page, after = near_group_page(session_factory, after=after, limit=4)
        seen.append(page)
        pages += 1
        if pages == 2:  # a group below the cursor and one above appear meanwhile
            with session_factory.begin() as session:
                session.execute(
                    insert(near_duplicates),
                    [
                        {"asset_id": a, "group_id": g, "distance": 1, "created_at": NOW}
                        for a, g in ((45, 45), (46, 45), (59, 59), (60, 59))
                    ],
                )
    keepers = group_keys(seen)
    assert len(keepers) == len(set(keepers))
    expected = [a for a in ids[:42:2] if a != 5] + [45, 59]
    assert keepers == expected
    assert all(len(g["assets"]) == 2 for page in seen for g in page)


def test_exact_groups_page_by_asset_id(session_factory):
    rng = random.Random(4)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(30)], copies=9)
    catalog = Catalog(session_factory)
    seen, after = [], 0
    while after is not None:
        page, after = catalog.duplicate_page(after=after, limit=2)
        seen += page
    assert [g["asset_id"] for g in seen] == list(range(1, 10))
    assert all(len(g["files"]) == 2 for g in seen)
    assert seen == catalog.duplicates()


def stored(factory) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    """The stored groups as (keeper, ((member, distance), ...)), comparable."""
    with factory.begin() as session:
        rows = session.execute(
            select(
                near_duplicates.c.group_id, near_duplicates.c.asset_id, near_duplicates.c.distance
            )
        ).all()
    groups: dict[int, list[tuple[int, int]]] = {}
    for group_id, asset_id, distance in rows:
        groups.setdefault(group_id, []).append((asset_id, distance))
    return {(keeper, tuple(sorted(members))) for keeper, members in groups.items()}


def computed(groups: list[list[dict]]) -> set[tuple[int, tuple[tuple[int, int], ...]]]:
    return {(g[0]["id"], tuple(sorted((m["id"], m["distance"]) for m in g))) for g in groups}


def test_similar_pairs_only_the_assets_added_since(session_factory):
    rng = random.Random(5)
    base = [rng.getrandbits(64) for _ in range(3000)]
    for n in range(0, 300, 3):  # 100 planted pairs
        base[n + 1] = base[n] ^ (1 << rng.randrange(64)) ^ (1 << rng.randrange(64))
    add_assets(session_factory, base)
    first = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=1))
    assert first.mode == "full" and first.groups >= 100

    nothing = regroup(session_factory, 12, clock=lambda: NOW + timedelta(hours=2))
    assert (nothing.mode, nothing.examined) == ("unchanged", 0)

    # 20 new assets an hour later: copies of old ones (joining or founding groups)
    # and strangers.
    added = [base[n] ^ (1 << rng.randrange(64)) for n in range(0, 60, 6)]
    added += [rng.getrandbits(64) for _ in range(10)]
    later = NOW + timedelta(hours=3)
    new_ids = add_assets(session_factory, added, first=3001)
    with session_factory.begin() as session:
        session.execute(update(assets).where(assets.c.id.in_(new_ids)).values(updated_at=later))
    step = regroup(session_factory, 12, clock=lambda: later + timedelta(minutes=10))
    assert step.mode == "incremental" and step.changed == 20
    # The work is the new assets' lookups, not the library's: a fraction of a full run.
    assert step.examined * 20 < first.examined
    assert stored(session_factory) == computed(find_groups(session_factory, 12))

    again = regroup(session_factory, 12, clock=lambda: later + timedelta(hours=1))
    assert again.mode == "unchanged"


def test_api_duplicates_pages_each_kind_by_cursor(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        factory = server.library.sessions
        rng = random.Random(6)
        ids = add_assets(factory, [rng.getrandbits(64) for _ in range(20)], copies=5)
        _replace_groups(
            factory, [[{"id": a, "distance": 0}, {"id": a + 1, "distance": 2}] for a in ids[:14:2]]
        )
        with server.client() as http:
            first = http.get("/api/duplicates", params={"limit": 2}).json()
            assert [g["asset_id"] for g in first["exact"]] == [1, 2]
            assert [g["keeper"] for g in first["near"]] == [1, 3]
            exact, near = first["exact"], first["near"]
            for kind, found in (("exact", exact), ("near", near)):
                cursor = first[f"{kind}_next_cursor"]
                while cursor:
                    page = http.get("/api/duplicates", params={"cursor": cursor, "limit": 2})
                    assert page.status_code == 200, page.text
                    other = "near" if kind == "exact" else "exact"
                    assert page.json()[other] == []
                    found += page.json()[kind]
                    cursor = page.json()[f"{kind}_next_cursor"]
            assert [g["asset_id"] for g in exact] == [1, 2, 3, 4, 5]
            assert [g["keeper"] for g in near] == ids[:14:2]
            assert all(g["group"] == f"near:{g['keeper']}" for g in near)

            only_near = http.get("/api/duplicates", params={"kind": "near", "limit": 3}).json()
            assert only_near["exact"] == [] and len(only_near["near"]) == 3
            wrong = http.get(
                "/api/duplicates", params={"kind": "exact", "cursor": only_near["near_next_cursor"]}
            )
            assert wrong.status_code == 422 and wrong.json()["code"] == "invalid_cursor"
            forged = http.get("/api/duplicates", params={"cursor": "bm9wZQ"})
            assert forged.status_code == 422 and forged.json()["code"] == "invalid_cursor"
            first_page = http.get("/api/assets", params={"limit": 5}).json()
            assert (first_page["total"], first_page["total_exact"]) == (20, True)
            later = http.get(
                "/api/assets", params={"limit": 5, "cursor": first_page["next_cursor"]}
            ).json()
            assert later["total"] is None and len(later["assets"]) == 5


def old_to_render(factory, fingerprint: str, force: bool = False) -> list[dict]:
    """``Renditions.to_render`` as it was: every asset's renditions counted."""
    first_file = (
        select(files.c.asset_id, func.min(files.c.id).label("file_id"))
        .where(files.c.state == "present", files.c.asset_id.is_not(None))
        .group_by(files.c.asset_id)
        .subquery()
    )
    current = (
        select(func.count())
        .where(
            renditions.c.asset_id == assets.c.id,
            renditions.c.fingerprint == fingerprint,
            renditions.c.kind.in_(KINDS),
        )
        .scalar_subquery()
    )
    query = (
        select(
            assets.c.id, assets.c.content_hash, files.c.path, sources.c.path.label("source_path")
        )
        .join(first_file, first_file.c.asset_id == assets.c.id)
        .join(files, files.c.id == first_file.c.file_id)
        .join(sources, sources.c.id == files.c.source_id)
        .order_by(assets.c.id)
    )
    if not force:
        query = query.where(current < len(KINDS))
    with factory() as session:
        return [dict(row._mapping) for row in session.execute(query)]


def rendered(asset_id: int, *kinds: str) -> RenderOutcome:
    return RenderOutcome(
        asset_id,
        tuple(
            StoredRendition(k, f"renditions/{asset_id}-{k}.webp", "webp", 9, 9, 9) for k in kinds
        ),
    )


def test_to_render_lists_what_counting_renditions_listed(session_factory):
    """The stale assets found in the renditions_fingerprint index are those whose
    renditions, counted, fall short, whatever was recorded, re-recorded or forgotten."""
    rng = random.Random(7)
    add_assets(session_factory, [rng.getrandbits(64) for _ in range(12)], copies=3)
    with session_factory.begin() as session:
        session.execute(update(files).where(files.c.asset_id == 4).values(state="missing"))
        session.execute(update(files).where(files.c.path == "1-0.jpg").values(state="missing"))
    rows = Renditions(session_factory)
    new, old = "new0000000000000", "old0000000000000"
    both = ("thumbnail", "preview")
    rows.record([rendered(a, *both) for a in (1, 2, 6, 10, 11)], new)
    rows.record([rendered(7, "thumbnail"), rendered(8, *both), rendered(9, "preview")], old)
    rows.record([rendered(9, "thumbnail")], new)  # one kind each way
    rows.record([rendered(11, "preview")], old)  # re-rendered with other settings
    rows.record([rendered(3, *both), rendered(4, *both)], new)
    rows.forget([10])
    # A failed item records nothing and changes no marker.
    rows.record([RenderOutcome(12, error=("decode_failed", "broken"))], new)
    for fingerprint in (new, old, "other00000000000"):
        assert rows.to_render(fingerprint) == old_to_render(session_factory, fingerprint)
    assert [r["id"] for r in rows.to_render(new)] == [5, 7, 8, 9, 10, 11, 12]
    assert [r["id"] for r in rows.to_render(old)] == [1, 2, 3, 5, 6, 7, 9, 10, 11, 12]
    assert rows.to_render(new)[0]["path"] == "5-0.jpg"
    assert [r["path"] for r in rows.to_render(new, force=True)][:2] == ["1-1.jpg", "2-0.jpg"]
    assert rows.to_render(new, force=True) == old_to_render(session_factory, new, force=True)


def test_the_migration_fills_renditions_fingerprint_from_the_rows(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine, "0016")
    factory = sessionmaker(engine)
    hashes = [1, 2, 3, 4]
    with factory.begin() as session:
        session.execute(insert(sources).values(id=1, path="/photos", added_at=NOW))
        for asset_id in hashes:
            session.execute(
                text(
                    "INSERT INTO assets (id, content_hash, size, format, mime, width, height,"
                    " orientation, taken_local, taken_source, created_at, updated_at)"
                    " VALUES (:id, :hash, 1, 'jpeg', 'image/jpeg', 1, 1, 1, '2020-01-01',"
                    " 'exif_original', 0, 0)"
                ),
                {"id": asset_id, "hash": f"{asset_id:064x}"},
            )
        made = {1: ("a", "a"), 2: ("a", "b"), 3: ("a", None)}
        for asset_id, prints in made.items():
            for kind, fingerprint in zip(KINDS, prints, strict=True):
                if fingerprint is not None:
                    session.execute(
                        insert(renditions).values(
                            asset_id=asset_id, kind=kind, path=f"{asset_id}-{kind}",
                            format="webp", width=1, height=1, bytes=1,
                            fingerprint=fingerprint, created_at=NOW,
                        )
                    )  # fmt: skip
    upgrade(engine)
    with engine.connect() as conn:
        marks = dict(conn.execute(select(assets.c.id, assets.c.renditions_fingerprint)).all())
    assert marks == {1: "a", 2: None, 3: None, 4: None}
    engine.dispose()
