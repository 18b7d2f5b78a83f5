"""The map's grid at scale on both databases: the triggers keep ``map_cells`` equal to a
count of the assets after inserts, moves, deletes and Live Photo pairings; a view adds
up to its assets at every zoom; each view's query is a range of an index (the summary's
primary key, or ``ix_assets_map_cell_id``), never a walk of every asset; and migration
0025 gives existing assets their cells and counts them."""

from __future__ import annotations

import random

import pytest
from sqlalchemy import (
    BigInteger,
    Float,
    bindparam,
    column,
    delete,
    func,
    insert,
    literal_column,
    select,
    text,
    update,
    values,
)

from photo_pipeline.db import create_database_engine
from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.migrate import upgrade
from photo_pipeline.db.schema import assets, map_cells
from photo_pipeline.pipeline.library.map import (
    MapBrowser,
    counted_query,
    points_query,
    summary_query,
)
from photo_pipeline.pipeline.library.map_grid import (
    BITS,
    SUMMARY_LEVELS,
    Box,
    cover,
    map_cell,
    shift,
)
from tests.integration.library.test_scale_queries import analyze, plan
from tests.support.catalogue_rows import add_assets

ASSETS = 3000
WORLD = Box(-180, -90, 180, 90)


def positions(rng: random.Random, n: int) -> list[tuple[float, float]]:
    """Half in a few cities (many at one spot), the rest anywhere, some by 180°."""
    cities = [(48.8566, 2.3522), (35.6895, 139.6917), (-17.7765, 179.9), (40.7128, -74.006)]
    found = []
    for i in range(n):
        if i % 2:
            lat, lon = cities[i % len(cities)]
            found.append((lat + rng.uniform(-0.05, 0.05), lon + rng.uniform(-0.05, 0.05)))
        elif i % 7 == 0:
            found.append((-16.8, rng.choice([179.99, -179.99])))
        else:
            found.append((rng.uniform(-80, 80), rng.uniform(-180, 180)))
    return found


def place(factory, ids: list[int], spots: list[tuple[float, float]]) -> None:
    """On PostgreSQL in UPDATE statements of 500 rows each (UPDATE ... FROM VALUES: the
    statement triggers sum many moves at once); on SQLite a row a statement (its
    VALUES takes no column names)."""
    rows = [(i, lat, lon, map_cell(lat, lon)) for i, (lat, lon) in zip(ids, spots, strict=True)]
    with factory.begin() as session:
        if not is_postgresql(session):
            session.execute(
                update(assets)
                .where(assets.c.id == bindparam("asset"))
                .values(
                    gps_latitude=bindparam("lat"),
                    gps_longitude=bindparam("lon"),
                    map_cell=bindparam("cell"),
                ),
                [dict(zip(("asset", "lat", "lon", "cell"), row, strict=True)) for row in rows],
            )
            return
        for start in range(0, len(rows), 500):
            given = values(
                column("asset", BigInteger),
                column("lat", Float),
                column("lon", Float),
                column("cell", BigInteger),
                name="given",
            ).data(rows[start : start + 500])
            session.execute(
                update(assets)
                .where(assets.c.id == given.c.asset)
                .values(gps_latitude=given.c.lat, gps_longitude=given.c.lon, map_cell=given.c.cell)
            )


@pytest.fixture
def mapped(session_factory):
    rng = random.Random(7)
    ids = add_assets(session_factory, [rng.getrandbits(64) for _ in range(ASSETS)])
    # A tenth stay without a position.
    placed = ids[: ASSETS * 9 // 10]
    place(session_factory, placed, positions(rng, len(placed)))
    analyze(session_factory)
    return session_factory


def recount(factory) -> dict[tuple[int, int], tuple[int, float, float, float, float]]:
    """map_cells as counted from assets now: (level, cell) → count, sums, south, north."""
    found = {}
    with factory() as session:
        for level in range(SUMMARY_LEVELS + 1):
            cell = assets.c.map_cell.op(">>")(literal_column(str(shift(level))))
            query = (
                select(
                    cell,
                    func.count(),
                    func.sum(assets.c.gps_latitude),
                    func.sum(assets.c.gps_longitude),
                    func.min(assets.c.gps_latitude),
                    func.max(assets.c.gps_latitude),
                )
                .where(assets.c.map_cell.is_not(None), assets.c.live_of.is_(None))
                .group_by(cell)
            )
            for row in session.execute(query):
                found[(level, row[0])] = tuple(row[1:])
    return found


def summary(factory) -> dict[tuple[int, int], tuple[int, float, float, float, float]]:
    with factory() as session:
        return {
            (r.level, r.cell): (r.count, r.lat_sum, r.lon_sum, r.south, r.north)
            for r in session.execute(select(map_cells))
        }


def assert_summary_counts(factory) -> None:
    kept, counted = summary(factory), recount(factory)
    assert kept.keys() == counted.keys()
    for key, (n, lat_sum, lon_sum, south, north) in counted.items():
        k_n, k_lat, k_lon, k_south, k_north = kept[key]
        assert k_n == n, key
        assert k_lat == pytest.approx(lat_sum, abs=1e-6) and k_lon == pytest.approx(
            lon_sum, abs=1e-6
        )
        assert k_south <= south and k_north >= north  # bounds only grow
    # Each cell's sample is one of its assets on the map.
    with factory() as session:
        samples = session.execute(
            select(map_cells.c.level, map_cells.c.cell, assets.c.map_cell, assets.c.live_of).join(
                assets, assets.c.id == map_cells.c.sample_id, isouter=True
            )
        ).all()
    for level, cell, asset_cell, live_of in samples:
        assert asset_cell is not None and asset_cell >> shift(level) == cell, (level, cell)
        assert live_of is None


def test_the_triggers_keep_the_summary_equal_to_a_count_of_the_assets(mapped):
    assert_summary_counts(mapped)
    rng = random.Random(11)
    with mapped.begin() as session:
        session.execute(delete(assets).where(assets.c.id % 9 == 0))  # some without position
    place(mapped, list(range(2, 600, 5)), positions(rng, len(range(2, 600, 5))))
    with mapped.begin() as session:  # moved off the map, and back on it
        session.execute(update(assets).where(assets.c.id.between(700, 760)).values(map_cell=None))
        # Live Photo motion halves leave the map; unpaired, they come back.
        session.execute(update(assets).where(assets.c.id % 13 == 0).values(live_of=1))
        session.execute(update(assets).where(assets.c.id % 26 == 0).values(live_of=None))
        # A write that changes nothing of the position costs the summary nothing.
        session.execute(update(assets).values(make="Other"))
    assert_summary_counts(mapped)
    # Copies of the first 299 (their own ids and hashes) inserted in one statement.
    renamed = {
        "id": assets.c.id + 100_000,
        "content_hash": func.substr(assets.c.content_hash, 2).concat("y"),
    }
    copies = select(*[renamed.get(c.name, c) for c in assets.c]).where(assets.c.id < 300)
    with mapped.begin() as session:
        session.execute(insert(assets).from_select([c.name for c in assets.c], copies))
    assert_summary_counts(mapped)
    with mapped.begin() as session:
        session.execute(delete(assets))
        assert session.scalar(select(func.count()).select_from(map_cells)) == 0


def on_map(factory) -> int:
    with factory() as session:
        return session.scalar(
            select(func.count()).where(assets.c.map_cell.is_not(None), assets.c.live_of.is_(None))
        )


@pytest.mark.parametrize("zoom", [0, 3, 8, 12, 14, 15, 17])
def test_a_view_of_the_world_adds_up_to_every_asset_on_the_map(mapped, zoom):
    found = MapBrowser(mapped).view(WORLD, zoom)
    assert sum(c.count for c in found.clusters) + len(found.points) == on_map(mapped)
    if zoom <= 3:
        assert len(found.clusters) + len(found.points) <= (4 << zoom) ** 2


def test_the_deepest_zoom_pages_through_a_view_across_the_antimeridian(mapped):
    box = Box(179, -18.5, -179, -16)
    seen, after = [], None
    browser = MapBrowser(mapped)
    while True:
        page = browser.view(box, 18, after=after, limit=37)
        seen += page.points
        after = page.next_cursor
        if after is None:
            break
    with mapped() as session:
        expected = {
            row.id
            for row in session.execute(
                select(assets.c.id, assets.c.gps_latitude, assets.c.gps_longitude).where(
                    assets.c.live_of.is_(None), assets.c.map_cell.is_not(None)
                )
            )
            if -18.5 <= row.gps_latitude <= -16 and abs(row.gps_longitude) >= 179
        }
    assert len(expected) > 100
    assert len(seen) == len({p.asset_id for p in seen}) == len(expected)
    assert {p.asset_id for p in seen} == expected


@pytest.mark.parametrize(
    ("name", "box", "zoom"),
    [
        ("world summary", WORLD, 2),
        ("city summary", Box(2.2, 48.8, 2.5, 48.9), 10),
        ("street summary", Box(2.33, 48.85, 2.36, 48.86), 14),
        ("street counted", Box(2.33, 48.85, 2.36, 48.86), 15),
        ("spot points", Box(2.3, 48.85, 2.31, 48.86), 18),
    ],
)
def test_each_view_is_a_range_of_an_index(mapped, name, box, zoom):
    level = min(zoom + 2, BITS)
    if name.endswith("summary"):
        lo, hi = cover(box, level).ranges[0]
        query, index = summary_query(level, lo, hi), ("pk_map_cells", "PRIMARY KEY")
    elif name.endswith("counted"):
        lo, hi = cover(box, level).full_ranges()[0]
        query, index = counted_query(level, lo, hi), ("ix_assets_map_cell_id",) * 2
    else:
        lo, hi = cover(box, 18).full_ranges()[0]
        query = points_query(lo, hi, box, (lo, 5), 200)
        index = ("ix_assets_map_cell_id",) * 2
    shown = plan(mapped, query)
    dialect = mapped.kw["bind"].dialect.name
    if dialect == "sqlite":
        assert index[1] in shown or "sqlite_autoindex_map_cells" in shown, shown
        assert "SCAN assets" not in shown and "SCAN map_cells" not in shown, shown
        assert "cell>" in shown.replace(" ", ""), shown  # a range of it, not all a level
    elif not name.startswith("world"):  # 3000 rows: a world view may read them all
        assert index[0] in shown, shown
        assert "Seq Scan" not in shown, shown


def test_the_migration_gives_existing_assets_their_cells(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine, "0022")
    base = {
        "size": 1,
        "format": "jpeg",
        "mime": "image/jpeg",
        "width": 1,
        "height": 1,
        "orientation": 1,
        "taken_local": "2020-01-01T00:00:00",
        "taken_source": "exif_original",
        "created_at": 0,
        "updated_at": 0,
    }
    spots = [(48.85, 2.35), (48.86, 2.36), (None, None), (0.0, 0.0), (-16.8, -179.99)]
    with engine.begin() as conn:
        for n, (lat, lon) in enumerate(spots):
            values = {
                **base,
                "content_hash": f"{n:064x}",
                "gps_latitude": lat,
                "gps_longitude": lon,
            }
            names = ", ".join(values)
            conn.execute(
                text(f"INSERT INTO assets ({names}) VALUES ({', '.join(':' + k for k in values)})"),
                values,
            )
    upgrade(engine)
    with engine.connect() as conn:
        cells = dict(conn.execute(select(assets.c.content_hash, assets.c.map_cell)).all())
        world = conn.execute(select(map_cells).where(map_cells.c.level == 0)).one()
        paris = conn.execute(
            select(map_cells.c.count).where(
                map_cells.c.level == 10, map_cells.c.cell == map_cell(48.85, 2.35) >> shift(10)
            )
        ).scalar()
    assert [cells[f"{n:064x}"] for n in range(5)] == [map_cell(*s) for s in spots]
    assert cells[f"{3:064x}"] is None  # null island is no position
    assert world.count == 3 and paris == 2
    assert world.south == pytest.approx(-16.8) and world.west == pytest.approx(-179.99)
    engine.dispose()
