"""Search words of tags and albums, and map_cells kept per statement on PostgreSQL.

- Search (pipeline.search_index): the document of each asset with a tag or in an
  album gets the words of their names, as the curation writers now write them (each
  label's words after the asset's own, labels in order, none twice).
- The map (pipeline.library.map): on PostgreSQL, 0025's row triggers become statement
  triggers with transition tables: a statement's added and removed positions are
  summed per (level, cell) and applied in one upsert, in (level, cell) order (the
  level-0 row first, as before: writers queue there instead of deadlocking), then the
  emptied cells go and the cells whose sample left get another. A COPY or an
  INSERT ... SELECT of 100k assets is one summary write, not 100k x 17. SQLite keeps
  0025's row triggers (there one writer runs at a time, and a row's trigger is cheap).

Revision ID: 0028
Revises: 0027
Create Date: 2026-12-02
"""

from __future__ import annotations

import importlib.util
import re
import unicodedata
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0027"
branch_labels = None
depends_on = None

_WORD = re.compile(r"[^\W_]+")
_CHUNK = 1000


def _words(text: str) -> list[str]:
    """search_index.words as it was at this revision."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _WORD.findall(unicodedata.normalize("NFC", bare))


def _add_label_words(bind: sa.Connection) -> None:
    labels: dict[int, list[str]] = {}
    for asset_id, label in bind.execute(
        sa.text(
            "SELECT l.asset_id, t.path FROM asset_tags AS l JOIN tags AS t ON t.id = l.tag_id"
            " UNION ALL SELECT m.asset_id, a.name FROM album_assets AS m"
            " JOIN albums AS a ON a.id = m.album_id"
        )
    ):
        labels.setdefault(asset_id, []).append(label)
    ids = sorted(labels)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        query = sa.text("SELECT asset_id, document FROM asset_search WHERE asset_id IN :ids")
        query = query.bindparams(sa.bindparam("ids", expanding=True))
        rows = bind.execute(query, {"ids": chunk}).all()
        updated = []
        for asset_id, document in rows:
            seen = dict.fromkeys(document.split())
            for label in sorted(labels[asset_id]):
                for word in _words(label):
                    seen.setdefault(word, None)
            updated.append({"asset": asset_id, "document": " ".join(seen)})
        if updated:
            bind.execute(
                sa.text("UPDATE asset_search SET document = :document WHERE asset_id = :asset"),
                updated,
            )


BITS = 24
LEVELS = 17  # 0..map_grid.SUMMARY_LEVELS

# Another asset of a cell whose sample left it (0025's, the first of the cell's range of
# ix_assets_map_cell_id).
_REPLACEMENT = (
    "SELECT a.id FROM assets AS a WHERE a.map_cell BETWEEN m.cell << (48 - 2 * m.level)"
    " AND ((m.cell + 1) << (48 - 2 * m.level)) - 1 AND coalesce(a.live_of, 0) = 0"
    " ORDER BY a.map_cell, a.id LIMIT 1"
)
_ON_MAP = "map_cell IS NOT NULL AND live_of IS NULL"
# The positions a statement added and removed: the rows of its transition tables on
# the map (of an update, only the rows whose position or pairing changed).
_CHANGES = {
    "INSERT": (
        f"SELECT id, map_cell, gps_latitude, gps_longitude FROM new_rows WHERE {_ON_MAP}",
        None,
    ),
    "DELETE": (
        None,
        f"SELECT id, map_cell, gps_latitude, gps_longitude FROM old_rows WHERE {_ON_MAP}",
    ),
    "UPDATE": (
        "SELECT n.id, n.map_cell, n.gps_latitude, n.gps_longitude FROM new_rows AS n"
        " JOIN old_rows AS o ON o.id = n.id WHERE n.map_cell IS NOT NULL AND n.live_of IS NULL"
        " AND (o.map_cell IS DISTINCT FROM n.map_cell OR o.live_of IS DISTINCT FROM n.live_of"
        " OR o.gps_latitude IS DISTINCT FROM n.gps_latitude"
        " OR o.gps_longitude IS DISTINCT FROM n.gps_longitude)",
        "SELECT o.id, o.map_cell, o.gps_latitude, o.gps_longitude FROM old_rows AS o"
        " JOIN new_rows AS n ON n.id = o.id WHERE o.map_cell IS NOT NULL AND o.live_of IS NULL"
        " AND (o.map_cell IS DISTINCT FROM n.map_cell OR o.live_of IS DISTINCT FROM n.live_of"
        " OR o.gps_latitude IS DISTINCT FROM n.gps_latitude"
        " OR o.gps_longitude IS DISTINCT FROM n.gps_longitude)",
    ),
}


# A cell's bounds from its added positions; a statement that only removed from it
# proposes bounds that leave the kept ones as they are (the proposed row must hold no
# NULL, even when it only updates).
_BOUNDS = (
    "coalesce(min(south), 'Infinity'), coalesce(max(north), '-Infinity'),"
    " coalesce(min(west), 'Infinity'), coalesce(max(east), '-Infinity')"
)


def _pg_function(event: str) -> str:
    added, removed = _CHANGES[event]
    levels = f"generate_series(0, {LEVELS - 1}) AS l"
    cell = f"map_cell >> ({2 * BITS} - 2 * l)"
    parts = []
    if added:
        parts.append(
            f"SELECT l, {cell} AS cell, 1 AS n, gps_latitude AS lat, gps_longitude AS lon,"
            " gps_latitude AS south, gps_latitude AS north, gps_longitude AS west,"
            f" gps_longitude AS east, id AS sample FROM added, {levels}"
        )
    if removed:
        parts.append(
            f"SELECT l, {cell} AS cell, -1 AS n, -gps_latitude AS lat, -gps_longitude AS lon,"
            " NULL::float8 AS south, NULL::float8 AS north, NULL::float8 AS west,"
            f" NULL::float8 AS east, NULL::bigint AS sample FROM removed, {levels}"
        )
    ctes = ", ".join(
        f"{name} AS MATERIALIZED ({query})"
        for name, query in (("added", added), ("removed", removed))
        if query
    )
    body = f"""
  WITH {ctes}
  INSERT INTO map_cells AS m (level, cell, count, lat_sum, lon_sum, south, north, west, east,
    sample_id)
  SELECT l, cell, sum(n), sum(lat), sum(lon), {_BOUNDS}, min(sample)
  FROM ({" UNION ALL ".join(parts)}) AS d
  GROUP BY l, cell ORDER BY l, cell
  ON CONFLICT (level, cell) DO UPDATE SET
    count = m.count + EXCLUDED.count, lat_sum = m.lat_sum + EXCLUDED.lat_sum,
    lon_sum = m.lon_sum + EXCLUDED.lon_sum, south = LEAST(m.south, EXCLUDED.south),
    north = GREATEST(m.north, EXCLUDED.north), west = LEAST(m.west, EXCLUDED.west),
    east = GREATEST(m.east, EXCLUDED.east),
    sample_id = coalesce(m.sample_id, EXCLUDED.sample_id);"""
    if removed:
        body += f"""
  WITH removed AS MATERIALIZED ({removed})
  DELETE FROM map_cells AS m
  USING (SELECT DISTINCT l, {cell} AS cell FROM removed, {levels}) AS gone
  WHERE m.level = gone.l AND m.cell = gone.cell AND m.count <= 0;
  WITH removed AS MATERIALIZED ({removed})
  UPDATE map_cells AS m SET sample_id = ({_REPLACEMENT})
  FROM (SELECT DISTINCT id, l, {cell} AS cell FROM removed, {levels}) AS gone
  WHERE m.level = gone.l AND m.cell = gone.cell AND m.sample_id = gone.id;"""
    return f"""
CREATE FUNCTION assets_map_cells_{event.lower()}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{body}
  RETURN NULL;
END $$"""


def _pg_trigger(event: str) -> str:
    tables = {"INSERT": "NEW TABLE AS new_rows", "DELETE": "OLD TABLE AS old_rows"}.get(
        event, "OLD TABLE AS old_rows NEW TABLE AS new_rows"
    )
    return (
        f"CREATE TRIGGER assets_map_{event.lower()} AFTER {event} ON assets"
        f" REFERENCING {tables} FOR EACH STATEMENT"
        f" EXECUTE FUNCTION assets_map_cells_{event.lower()}()"
    )


def _revision_0025() -> Any:
    path = Path(__file__).with_name("0025_map_cells.py")
    spec = importlib.util.spec_from_file_location("revision_0025", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def upgrade() -> None:
    bind = op.get_bind()
    _add_label_words(bind)
    if bind.dialect.name == "postgresql":
        for name in ("assets_map_insert_delete", "assets_map_update"):
            bind.execute(sa.text(f"DROP TRIGGER {name} ON assets"))
        bind.execute(sa.text("DROP FUNCTION assets_map_cells()"))
        for event in _CHANGES:
            bind.execute(sa.text(_pg_function(event)))
            bind.execute(sa.text(_pg_trigger(event)))


def downgrade() -> None:
    # The label words stay: an older revision searches them too, harmlessly.
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        for event in _CHANGES:
            bind.execute(sa.text(f"DROP TRIGGER assets_map_{event.lower()} ON assets"))
            bind.execute(sa.text(f"DROP FUNCTION assets_map_cells_{event.lower()}()"))
        # 0025's row triggers again, as that revision wrote them.
        m0025 = _revision_0025()
        bind.execute(sa.text(m0025.POSTGRESQL_FUNCTION))
        for statement in m0025.POSTGRESQL_TRIGGERS:
            bind.execute(sa.text(statement))
