"""The map (pipeline.library.map): assets.map_cell, the Morton code of the asset's
position on a 2**24 × 2**24 Web Mercator grid (pipeline.library.map_grid; NULL without
a position), indexed for the assets of a view; and map_cells, for every populated cell
of levels 0..16 (down to zoom 14, cells of about 600 m), its assets' count, position
sums, bounds and one of them (its thumbnail), so that a view of the world or a street
reads a few hundred rows whatever the library's size.

map_cells is kept by triggers on assets (insert, delete, and an update that moves an
asset or pairs a Live Photo's motion half, which the map leaves out), so every writer,
now and later, keeps it. A cell's bounds only grow: after a removal they may be wider
than its members until the cell empties. On PostgreSQL each trigger touches the level-0
row first: concurrent writers queue on it instead of deadlocking on cells taken in
different orders (a catalogue batch holds it until its commit).

Existing assets get their cell here, then the summary is counted from them.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-02
"""

from __future__ import annotations

import math

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

BITS = 24
LEVELS = range(17)  # 0..map_grid.SUMMARY_LEVELS
_MAX_LATITUDE = 85.05112878
_NULL_ISLAND = 1e-6  # media.places.NULL_ISLAND_DEGREES when this was written


def _spread(value: int) -> int:
    value &= 0xFFFFFF
    value = (value | (value << 16)) & 0x0000FFFF0000FFFF
    value = (value | (value << 8)) & 0x00FF00FF00FF00FF
    value = (value | (value << 4)) & 0x0F0F0F0F0F0F0F0F
    value = (value | (value << 2)) & 0x3333333333333333
    return (value | (value << 1)) & 0x5555555555555555


def _map_cell(lat: float | None, lon: float | None) -> int | None:
    """map_grid.map_cell as it was at this revision (a migration does not follow code)."""
    if lat is None or lon is None or not (math.isfinite(lat) and math.isfinite(lon)):
        return None
    if abs(lat) > 90 or abs(lon) > 180 or (abs(lat) < _NULL_ISLAND and abs(lon) < _NULL_ISLAND):
        return None
    phi = math.radians(max(-_MAX_LATITUDE, min(_MAX_LATITUDE, lat)))
    x = min(max((lon + 180.0) / 360.0, 0.0), 1.0)
    y = min(max((1.0 - math.log(math.tan(math.pi / 4 + phi / 2)) / math.pi) / 2.0, 0.0), 1.0)
    cells = 1 << BITS
    cx, cy = min(int(x * cells), cells - 1), min(int(y * cells), cells - 1)
    return _spread(cx) | (_spread(cy) << 1)


# ── SQLite: one trigger per event, each statement over the 17 cells of the row ──────
def _sqlite_cells(row: str) -> str:
    return ", ".join(f"({level}, {row}.map_cell >> {2 * (BITS - level)})" for level in LEVELS)


def _sqlite_add(row: str) -> str:
    return f"""
    INSERT INTO map_cells (level, cell, count, lat_sum, lon_sum, south, north, west, east,
                           sample_id)
    SELECT column1, column2, 1, {row}.gps_latitude, {row}.gps_longitude, {row}.gps_latitude,
           {row}.gps_latitude, {row}.gps_longitude, {row}.gps_longitude, {row}.id
    FROM (VALUES {_sqlite_cells(row)})
    WHERE {row}.map_cell IS NOT NULL AND {row}.live_of IS NULL
    ON CONFLICT (level, cell) DO UPDATE SET
      count = count + 1, lat_sum = lat_sum + excluded.lat_sum,
      lon_sum = lon_sum + excluded.lon_sum, south = min(south, excluded.south),
      north = max(north, excluded.north), west = min(west, excluded.west),
      east = max(east, excluded.east);"""


# Another asset of a cell whose sample left it: the first of the cell's range of
# ix_assets_map_cell_id (the row that left is gone, moved, or now a motion half). NULL
# when there is none yet: on PostgreSQL a statement's row triggers run after all its
# rows changed, so the cell's last assets may all be gone before their triggers empty it.
_REPLACEMENT = (
    "SELECT a.id FROM assets AS a WHERE a.map_cell BETWEEN {m}.cell << (48 - 2 * {m}.level)"
    " AND (({m}.cell + 1) << (48 - 2 * {m}.level)) - 1 AND coalesce(a.live_of, 0) = 0"
    " ORDER BY a.map_cell, a.id LIMIT 1"
)


def _sqlite_remove(row: str) -> str:
    eligible = f"{row}.map_cell IS NOT NULL AND {row}.live_of IS NULL"
    cells = f"(level, cell) IN (VALUES {_sqlite_cells(row)})"
    return f"""
    UPDATE map_cells SET count = count - 1, lat_sum = lat_sum - {row}.gps_latitude,
      lon_sum = lon_sum - {row}.gps_longitude
    WHERE {eligible} AND {cells};
    DELETE FROM map_cells WHERE {eligible} AND {cells} AND count <= 0;
    UPDATE map_cells SET sample_id = ({_REPLACEMENT.format(m="map_cells")})
    WHERE {eligible} AND {cells} AND sample_id = {row}.id;"""


_MOVED = (
    "OLD.map_cell IS NOT NEW.map_cell OR OLD.live_of IS NOT NEW.live_of"
    " OR OLD.gps_latitude IS NOT NEW.gps_latitude OR OLD.gps_longitude IS NOT NEW.gps_longitude"
)

SQLITE_TRIGGERS = [
    f"CREATE TRIGGER assets_map_insert AFTER INSERT ON assets BEGIN {_sqlite_add('NEW')} END",
    f"CREATE TRIGGER assets_map_delete AFTER DELETE ON assets BEGIN {_sqlite_remove('OLD')} END",
    "CREATE TRIGGER assets_map_update AFTER UPDATE OF map_cell, live_of, gps_latitude,"
    f" gps_longitude ON assets WHEN {_MOVED} BEGIN {_sqlite_remove('OLD')}"
    f" {_sqlite_add('NEW')} END",
]

# ── PostgreSQL: one function; level 0 first and alone (see the docstring), then the
# other levels in one statement each (a join of 16 primary-key probes) ────────────────
_PG_DEEPER = (
    f"FROM generate_series(1, {LEVELS.stop - 1}) AS l"
    f" WHERE m.level = l AND m.cell = OLD.map_cell >> ({2 * BITS} - 2 * l)"
)
POSTGRESQL_FUNCTION = f"""
CREATE FUNCTION assets_map_cells() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF TG_OP <> 'INSERT' AND OLD.map_cell IS NOT NULL AND OLD.live_of IS NULL THEN
    UPDATE map_cells AS m SET count = m.count - 1,
      lat_sum = m.lat_sum - OLD.gps_latitude, lon_sum = m.lon_sum - OLD.gps_longitude
    WHERE m.level = 0 AND m.cell = 0;
    UPDATE map_cells AS m SET count = m.count - 1,
      lat_sum = m.lat_sum - OLD.gps_latitude, lon_sum = m.lon_sum - OLD.gps_longitude
    {_PG_DEEPER};
    DELETE FROM map_cells AS m USING generate_series(0, {LEVELS.stop - 1}) AS l
    WHERE m.level = l AND m.cell = OLD.map_cell >> ({2 * BITS} - 2 * l) AND m.count <= 0;
    UPDATE map_cells AS m SET sample_id = ({_REPLACEMENT.format(m="m")})
    FROM generate_series(0, {LEVELS.stop - 1}) AS l
    WHERE m.level = l AND m.cell = OLD.map_cell >> ({2 * BITS} - 2 * l)
      AND m.sample_id = OLD.id;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.map_cell IS NOT NULL AND NEW.live_of IS NULL THEN
    -- In level order: the level-0 row is the first this statement locks.
    INSERT INTO map_cells AS m (level, cell, count, lat_sum, lon_sum, south, north, west,
      east, sample_id)
    SELECT l, NEW.map_cell >> ({2 * BITS} - 2 * l), 1, NEW.gps_latitude, NEW.gps_longitude,
      NEW.gps_latitude, NEW.gps_latitude, NEW.gps_longitude, NEW.gps_longitude, NEW.id
    FROM generate_series(0, {LEVELS.stop - 1}) AS l ORDER BY l
    ON CONFLICT (level, cell) DO UPDATE SET
      count = m.count + 1, lat_sum = m.lat_sum + EXCLUDED.lat_sum,
      lon_sum = m.lon_sum + EXCLUDED.lon_sum, south = LEAST(m.south, EXCLUDED.south),
      north = GREATEST(m.north, EXCLUDED.north), west = LEAST(m.west, EXCLUDED.west),
      east = GREATEST(m.east, EXCLUDED.east);
  END IF;
  RETURN NULL;
END $$"""

_PG_MOVED = (
    "OLD.map_cell IS DISTINCT FROM NEW.map_cell OR OLD.live_of IS DISTINCT FROM NEW.live_of"
    " OR OLD.gps_latitude IS DISTINCT FROM NEW.gps_latitude"
    " OR OLD.gps_longitude IS DISTINCT FROM NEW.gps_longitude"
)
POSTGRESQL_TRIGGERS = [
    "CREATE TRIGGER assets_map_insert_delete AFTER INSERT OR DELETE ON assets"
    " FOR EACH ROW EXECUTE FUNCTION assets_map_cells()",
    "CREATE TRIGGER assets_map_update AFTER UPDATE OF map_cell, live_of, gps_latitude,"
    f" gps_longitude ON assets FOR EACH ROW WHEN ({_PG_MOVED})"
    " EXECUTE FUNCTION assets_map_cells()",
]


def upgrade() -> None:
    bind = op.get_bind()
    op.add_column("assets", sa.Column("map_cell", sa.BigInteger(), nullable=True))
    assets = sa.table(
        "assets",
        sa.column("id", sa.BigInteger),
        sa.column("gps_latitude", sa.Float),
        sa.column("gps_longitude", sa.Float),
        sa.column("map_cell", sa.BigInteger),
    )
    query = (
        sa.select(assets.c.id, assets.c.gps_latitude, assets.c.gps_longitude)
        .where(assets.c.gps_latitude.is_not(None), assets.c.gps_longitude.is_not(None))
        .order_by(assets.c.id)
    )
    cells = [
        {"asset": row.id, "cell": cell}
        for row in bind.execute(query)
        if (cell := _map_cell(row.gps_latitude, row.gps_longitude)) is not None
    ]
    update = (
        sa.update(assets)
        .where(assets.c.id == sa.bindparam("asset"))
        .values(map_cell=sa.bindparam("cell"))
    )
    for start in range(0, len(cells), 5000):
        bind.execute(update, cells[start : start + 5000])
    op.create_index("ix_assets_map_cell_id", "assets", ["map_cell", "id"])
    op.create_index(
        "ix_assets_places",
        "assets",
        ["country_code", "country", "region", "city", "live_of", "gps_latitude", "gps_longitude"],
    )
    op.create_table(
        "map_cells",
        sa.Column("level", sa.SmallInteger(), nullable=False),
        sa.Column("cell", sa.BigInteger(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("lat_sum", sa.Float(), nullable=False),
        sa.Column("lon_sum", sa.Float(), nullable=False),
        sa.Column("south", sa.Float(), nullable=False),
        sa.Column("north", sa.Float(), nullable=False),
        sa.Column("west", sa.Float(), nullable=False),
        sa.Column("east", sa.Float(), nullable=False),
        sa.Column("sample_id", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("level", "cell", name=op.f("pk_map_cells")),
    )
    for level in LEVELS:
        shift = 2 * (BITS - level)
        bind.execute(
            sa.text(
                "INSERT INTO map_cells (level, cell, count, lat_sum, lon_sum, south, north,"
                f" west, east, sample_id) SELECT {level}, map_cell >> {shift}, count(*),"
                " sum(gps_latitude), sum(gps_longitude), min(gps_latitude), max(gps_latitude),"
                " min(gps_longitude), max(gps_longitude), min(id) FROM assets"
                " WHERE map_cell IS NOT NULL AND live_of IS NULL"
                f" GROUP BY map_cell >> {shift}"
            )
        )
    if bind.dialect.name == "sqlite":
        for statement in SQLITE_TRIGGERS:
            bind.execute(sa.text(statement))
    else:
        bind.execute(sa.text(POSTGRESQL_FUNCTION))
        for statement in POSTGRESQL_TRIGGERS:
            bind.execute(sa.text(statement))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for name in ("assets_map_insert", "assets_map_delete", "assets_map_update"):
            bind.execute(sa.text(f"DROP TRIGGER {name}"))
    else:
        for name in ("assets_map_insert_delete", "assets_map_update"):
            bind.execute(sa.text(f"DROP TRIGGER {name} ON assets"))
        bind.execute(sa.text("DROP FUNCTION assets_map_cells()"))
    op.drop_table("map_cells")
    op.drop_index("ix_assets_places", table_name="assets")
    op.drop_index("ix_assets_map_cell_id", table_name="assets")
    op.drop_column("assets", "map_cell")
