"""The timeline filtered by camera or by place (pipeline.library.timeline): for every
camera (make, model) and every stored place (country code, country, region, city,
district; '' for what is not known) the number of assets the library shows on each
capture day, as timeline_days (0029) counts them (a Live Photo's motion half left out),
so that a filtered timeline reads the summary's rows of the matching cameras or places,
not every matching asset: each column has an index led by it (the first, the primary
key), in which the matching values are found by a loose scan and their rows read. An
asset with no camera (or no place) at all is not counted in that summary: no camera
(or place) filter finds it.

Kept by triggers on assets as place_counts (0030) is: on SQLite row triggers, on
PostgreSQL statement triggers with transition tables, each first taking the asset
summaries' advisory lock (0029's), so that writers queue there and never deadlock on
rows taken in different orders.

Existing assets are counted here.

Revision ID: 0032
Revises: 0031
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0032"
down_revision = "0031"
branch_labels = None
depends_on = None

# pipeline.library.timeline.SUMMARY_LOCK: the advisory lock of the asset summaries.
SUMMARY_LOCK = 0x7069705F64617973  # "pip_days"

# Each summary: its table, its trigger's name part and the assets' columns it counts by.
SUMMARIES = {
    "timeline_cameras": ("cameras", ("make", "model")),
    "timeline_places": ("places", ("country_code", "country", "region", "city", "district")),
}


def _counted(row: str, keys: tuple[str, ...]) -> str:
    known = " OR ".join(f"{row}.{k} IS NOT NULL" for k in keys)
    return f"{row}.live_of IS NULL AND ({known})"


def _key(row: str, keys: tuple[str, ...]) -> str:
    return ", ".join(
        [*(f"coalesce({row}.{k}, '')" for k in keys), f"substr({row}.taken_local, 1, 10)"]
    )


def _matches(row: str, keys: tuple[str, ...]) -> str:
    """The summary's row of ``row`` (an asset's OLD or NEW)."""
    return " AND ".join(
        [
            *(f"{k} = coalesce({row}.{k}, '')" for k in keys),
            f"day = substr({row}.taken_local, 1, 10)",
        ]
    )


# The rebuild, as pipeline.library.timeline.rebuild_timeline_facets writes it.
def rebuild(table: str) -> str:
    keys = SUMMARIES[table][1]
    return (
        f"INSERT INTO {table} ({', '.join(keys)}, day, count)"
        f" SELECT {_key('assets', keys)}, count(*) FROM assets"
        f" WHERE {_counted('assets', keys)} GROUP BY {_key('assets', keys)}"
    )


# ── SQLite: one row trigger per event ───────────────────────────────────────────────
def _sqlite_triggers(table: str) -> list[str]:
    name, keys = SUMMARIES[table]
    add = (
        f"INSERT INTO {table} ({', '.join(keys)}, day, count) SELECT {_key('NEW', keys)}, 1"
        f" WHERE {_counted('NEW', keys)}"
        f" ON CONFLICT ({', '.join(keys)}, day) DO UPDATE SET count = count + 1;"
    )
    where = f"{_counted('OLD', keys)} AND {_matches('OLD', keys)}"
    remove = (
        f"UPDATE {table} SET count = count - 1 WHERE {where};"
        f" DELETE FROM {table} WHERE {where} AND count <= 0;"
    )
    watched = (*keys, "taken_local", "live_of")
    changed = " OR ".join(f"OLD.{c} IS NOT NEW.{c}" for c in watched)
    return [
        f"CREATE TRIGGER assets_{name}_days_insert AFTER INSERT ON assets BEGIN {add} END",
        f"CREATE TRIGGER assets_{name}_days_delete AFTER DELETE ON assets BEGIN {remove} END",
        f"CREATE TRIGGER assets_{name}_days_update AFTER UPDATE OF {', '.join(watched)}"
        f" ON assets WHEN {changed} BEGIN {remove} {add} END",
    ]


# ── PostgreSQL: statement triggers with transition tables ───────────────────────────
def _pg_changes(keys: tuple[str, ...]) -> dict[str, tuple[str | None, str | None]]:
    watched = (*keys, "taken_local", "live_of")
    changed = " OR ".join(f"o.{c} IS DISTINCT FROM n.{c}" for c in watched)
    return {
        "INSERT": (f"SELECT * FROM new_rows AS n WHERE {_counted('n', keys)}", None),
        "DELETE": (None, f"SELECT * FROM old_rows AS o WHERE {_counted('o', keys)}"),
        "UPDATE": (
            f"SELECT n.* FROM new_rows AS n JOIN old_rows AS o ON o.id = n.id"
            f" WHERE {_counted('n', keys)} AND ({changed})",
            f"SELECT o.* FROM old_rows AS o JOIN new_rows AS n ON n.id = o.id"
            f" WHERE {_counted('o', keys)} AND ({changed})",
        ),
    }


def _pg_function(table: str, event: str) -> str:
    name, keys = SUMMARIES[table]
    added, removed = _pg_changes(keys)[event]
    parts = []
    if added:
        parts.append(f"SELECT {_key('a', keys)}, 1 FROM ({added}) AS a")
    if removed:
        parts.append(f"SELECT {_key('r', keys)}, -1 FROM ({removed}) AS r")
    columns = ", ".join((*keys, "day"))
    body = f"""
  PERFORM pg_advisory_xact_lock({SUMMARY_LOCK});
  INSERT INTO {table} AS m ({columns}, count)
  SELECT {columns}, sum(n) FROM ({" UNION ALL ".join(parts)}) AS d ({columns}, n)
  GROUP BY {columns} ORDER BY {columns}
  ON CONFLICT ({columns}) DO UPDATE SET count = m.count + excluded.count;"""
    if removed:
        body += f"""
  DELETE FROM {table} WHERE count <= 0
    AND ({columns}) IN (SELECT {_key("r", keys)} FROM ({removed}) AS r);"""
    return f"""
CREATE FUNCTION assets_{name}_days_{event.lower()}() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN{body}
  RETURN NULL;
END $$"""


def _pg_trigger(table: str, event: str) -> str:
    name = SUMMARIES[table][0]
    tables = {"INSERT": "NEW TABLE AS new_rows", "DELETE": "OLD TABLE AS old_rows"}.get(
        event, "OLD TABLE AS old_rows NEW TABLE AS new_rows"
    )
    return (
        f"CREATE TRIGGER assets_{name}_days_{event.lower()} AFTER {event} ON assets"
        f" REFERENCING {tables} FOR EACH STATEMENT"
        f" EXECUTE FUNCTION assets_{name}_days_{event.lower()}()"
    )


_EVENTS = ("INSERT", "DELETE", "UPDATE")


def upgrade() -> None:
    bind = op.get_bind()
    for table, (_, keys) in SUMMARIES.items():
        op.create_table(
            table,
            *(sa.Column(k, sa.String(), nullable=False) for k in keys),
            sa.Column("day", sa.String(10), nullable=False),
            sa.Column("count", sa.BigInteger(), nullable=False),
            sa.PrimaryKeyConstraint(*keys, "day", name=op.f(f"pk_{table}")),
        )
        for key in keys[1:]:  # the first leads the primary key
            op.create_index(f"ix_{table}_{key}_day", table, [key, "day"])
        bind.execute(sa.text(rebuild(table)))
        if bind.dialect.name == "sqlite":
            for statement in _sqlite_triggers(table):
                bind.execute(sa.text(statement))
        else:
            for event in _EVENTS:
                bind.execute(sa.text(_pg_function(table, event)))
                bind.execute(sa.text(_pg_trigger(table, event)))


def downgrade() -> None:
    bind = op.get_bind()
    for table, (name, _) in SUMMARIES.items():
        for event in _EVENTS:
            trigger = f"assets_{name}_days_{event.lower()}"
            if bind.dialect.name == "sqlite":
                bind.execute(sa.text(f"DROP TRIGGER {trigger}"))
            else:
                bind.execute(sa.text(f"DROP TRIGGER {trigger} ON assets"))
                bind.execute(sa.text(f"DROP FUNCTION {trigger}()"))
        op.drop_table(table)
