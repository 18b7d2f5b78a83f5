"""The places beside the map (pipeline.library.places): place_counts, for every stored
place of the library's assets (country code, country, region, city; '' for a level not
known) the number of assets the map shows there (a Live Photo's motion half left out),
how many of them have a position, and the bounds of those positions, so that the
countries → regions → cities listing reads a row per place, not every asset.

It is kept by triggers on assets (insert, delete, and an update that changes the place,
the position or a Live Photo's pairing), so every writer keeps it: on SQLite row
triggers, on PostgreSQL statement triggers with transition tables (a statement's changes
summed per place, applied in one upsert in key order: a bulk write is one summary
write). As in map_cells (0025) a place's bounds only grow after a removal; they are
dropped when its last positioned asset leaves. On PostgreSQL each trigger first takes
the asset summaries' advisory lock (0029's), so that writers queue there and never
deadlock on places taken in different orders.

Existing assets are counted here.

Revision ID: 0030
Revises: 0029
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0030"
down_revision = "0029"
branch_labels = None
depends_on = None

# pipeline.library.timeline.SUMMARY_LOCK: the advisory lock of the asset summaries.
SUMMARY_LOCK = 0x7069705F64617973  # "pip_days"

_KEY = ("country_code", "country", "region", "city")
_COUNTED = "country_code IS NOT NULL AND live_of IS NULL"
_WATCHED = ("country_code", "country", "region", "city", "live_of", "gps_latitude", "gps_longitude")

# The rebuild, as pipeline.library.places.rebuild_place_counts wrote it at this revision.
REBUILD = f"""
INSERT INTO place_counts (country_code, country, region, city, count, located, south, north,
  west, east)
SELECT country_code, coalesce(country, ''), coalesce(region, ''), coalesce(city, ''),
  count(*), count(gps_latitude), min(gps_latitude), max(gps_latitude), min(gps_longitude),
  max(gps_longitude)
FROM assets WHERE {_COUNTED}
GROUP BY country_code, coalesce(country, ''), coalesce(region, ''), coalesce(city, '')"""


def _grown(column: str, pick: str) -> str:
    """The kept bound widened by the proposed one (either may be NULL); NULL once the
    place has no positioned asset left."""
    return (
        f"CASE WHEN m.located + excluded.located <= 0 THEN NULL"
        f" WHEN m.{column} IS NULL THEN excluded.{column}"
        f" WHEN excluded.{column} IS NULL THEN m.{column}"
        f" ELSE {pick}(m.{column}, excluded.{column}) END"
    )


def _upsert_set(low: str, high: str) -> str:
    """The upsert's SET: counts added, bounds widened (``low``/``high``: the dialect's
    smaller and larger of two values)."""
    return "count = m.count + excluded.count, located = m.located + excluded.located, " + (
        ", ".join(
            f"{c} = {_grown(c, pick)}"
            for c, pick in (("south", low), ("north", high), ("west", low), ("east", high))
        )
    )


def _row(row: str, sign: int) -> str:
    """A row's change to its place: its key, +1 / -1 and (added) its position."""
    bounds = (
        f"{row}.gps_latitude, {row}.gps_latitude, {row}.gps_longitude, {row}.gps_longitude"
        if sign > 0
        else "CAST(NULL AS FLOAT), CAST(NULL AS FLOAT), CAST(NULL AS FLOAT), CAST(NULL AS FLOAT)"
    )
    return (
        f"{row}.country_code, coalesce({row}.country, ''), coalesce({row}.region, ''),"
        f" coalesce({row}.city, ''), {sign}, "
        f" CASE WHEN {row}.gps_latitude IS NULL THEN 0 ELSE {sign} END, {bounds}"
    )


_COLUMNS = "country_code, country, region, city, count, located, south, north, west, east"


# ── SQLite: one row trigger per event ───────────────────────────────────────────────
def _sqlite_add(row: str) -> str:
    # SQLite's min()/max() of two values is NULL if either is: _grown handles both.
    sqlite_set = _upsert_set("min", "max").replace("m.", "place_counts.")
    return (
        f"INSERT INTO place_counts ({_COLUMNS}) SELECT {_row(row, 1)}"
        f" WHERE {row}.country_code IS NOT NULL AND {row}.live_of IS NULL"
        f" ON CONFLICT ({', '.join(_KEY)}) DO UPDATE SET {sqlite_set};"
    )


def _sqlite_remove(row: str) -> str:
    where = (
        f"{row}.country_code IS NOT NULL AND {row}.live_of IS NULL"
        f" AND country_code = {row}.country_code AND country = coalesce({row}.country, '')"
        f" AND region = coalesce({row}.region, '') AND city = coalesce({row}.city, '')"
    )
    located = f"(CASE WHEN {row}.gps_latitude IS NULL THEN 0 ELSE 1 END)"
    return (
        f"UPDATE place_counts SET count = count - 1, located = located - {located},"
        f" south = CASE WHEN located - {located} <= 0 THEN NULL ELSE south END,"
        f" north = CASE WHEN located - {located} <= 0 THEN NULL ELSE north END,"
        f" west = CASE WHEN located - {located} <= 0 THEN NULL ELSE west END,"
        f" east = CASE WHEN located - {located} <= 0 THEN NULL ELSE east END"
        f" WHERE {where};"
        f" DELETE FROM place_counts WHERE {where} AND count <= 0;"
    )


_SQLITE_CHANGED = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in _WATCHED)
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER assets_places_insert AFTER INSERT ON assets BEGIN {_sqlite_add('NEW')} END",
    f"CREATE TRIGGER assets_places_delete AFTER DELETE ON assets BEGIN {_sqlite_remove('OLD')} END",
    f"CREATE TRIGGER assets_places_update AFTER UPDATE OF {', '.join(_WATCHED)} ON assets"
    f" WHEN {_SQLITE_CHANGED} BEGIN {_sqlite_remove('OLD')} {_sqlite_add('NEW')} END",
]

# ── PostgreSQL: statement triggers with transition tables ───────────────────────────
_PG_CHANGED = " OR ".join(f"o.{c} IS DISTINCT FROM n.{c}" for c in _WATCHED)
_CHANGES = {
    "INSERT": (f"SELECT * FROM new_rows WHERE {_COUNTED}", None),
    "DELETE": (None, f"SELECT * FROM old_rows WHERE {_COUNTED}"),
    "UPDATE": (
        f"SELECT n.* FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id"
        f" WHERE n.country_code IS NOT NULL AND n.live_of IS NULL AND ({_PG_CHANGED})",
        f"SELECT o.* FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id"
        f" WHERE o.country_code IS NOT NULL AND o.live_of IS NULL AND ({_PG_CHANGED})",
    ),
}


def _pg_function(event: str) -> str:
    added, removed = _CHANGES[event]
    parts = []
    if added:
        parts.append(f"SELECT {_row('a', 1)} FROM added AS a")
    if removed:
        parts.append(f"SELECT {_row('r', -1)} FROM removed AS r")
    ctes = ", ".join(
        f"{name} AS MATERIALIZED ({query})"
        for name, query in (("added", added), ("removed", removed))
        if query
    )
    key = ", ".join(_KEY)
    body = f"""
  PERFORM pg_advisory_xact_lock({SUMMARY_LOCK});
  WITH {ctes}
  INSERT INTO place_counts AS m ({_COLUMNS})
  SELECT {key}, sum(n), sum(l), min(s), max(no), min(w), max(e)
  FROM ({" UNION ALL ".join(parts)}) AS d ({key}, n, l, s, no, w, e)
  GROUP BY {key} ORDER BY {key}
  ON CONFLICT ({key}) DO UPDATE SET {_upsert_set("LEAST", "GREATEST")};"""
    if removed:
        body += "\n  DELETE FROM place_counts WHERE count <= 0;"
    return f"""
CREATE FUNCTION assets_place_counts_{event.lower()}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{body}
  RETURN NULL;
END $$"""


def _pg_trigger(event: str) -> str:
    tables = {"INSERT": "NEW TABLE AS new_rows", "DELETE": "OLD TABLE AS old_rows"}.get(
        event, "OLD TABLE AS old_rows NEW TABLE AS new_rows"
    )
    return (
        f"CREATE TRIGGER assets_places_{event.lower()} AFTER {event} ON assets"
        f" REFERENCING {tables} FOR EACH STATEMENT"
        f" EXECUTE FUNCTION assets_place_counts_{event.lower()}()"
    )


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "place_counts",
        sa.Column("country_code", sa.String(), nullable=False),
        sa.Column("country", sa.String(), nullable=False),
        sa.Column("region", sa.String(), nullable=False),
        sa.Column("city", sa.String(), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.Column("located", sa.BigInteger(), nullable=False),
        sa.Column("south", sa.Float(), nullable=True),
        sa.Column("north", sa.Float(), nullable=True),
        sa.Column("west", sa.Float(), nullable=True),
        sa.Column("east", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint(*_KEY, name=op.f("pk_place_counts")),
    )
    bind.execute(sa.text(REBUILD))
    if bind.dialect.name == "sqlite":
        for statement in SQLITE_TRIGGERS:
            bind.execute(sa.text(statement))
    else:
        for event in _CHANGES:
            bind.execute(sa.text(_pg_function(event)))
            bind.execute(sa.text(_pg_trigger(event)))


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "sqlite":
        for event in _CHANGES:
            bind.execute(sa.text(f"DROP TRIGGER assets_places_{event.lower()}"))
    else:
        for event in _CHANGES:
            bind.execute(sa.text(f"DROP TRIGGER assets_places_{event.lower()} ON assets"))
            bind.execute(sa.text(f"DROP FUNCTION assets_place_counts_{event.lower()}()"))
    op.drop_table("place_counts")
