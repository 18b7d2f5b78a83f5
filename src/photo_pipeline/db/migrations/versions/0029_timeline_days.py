"""The timeline (pipeline.library.timeline): timeline_days, for every capture day (local
calendar, the first ten characters of taken_local) the number of assets the library
shows on it (a Live Photo's motion half, shown by its still, is not counted), so that
the timeline's buckets and its scrubber read a row per day whatever the library's size.
Months and years are added up from the days.

It is kept by triggers on assets (insert, delete, and an update that changes the day or
pairs a Live Photo's halves), so every writer, now and later, keeps it. Counted are the
catalogue's assets: one whose files are all gone stays counted until it is removed (the
listing leaves it out).

On PostgreSQL each trigger first takes one transaction-scoped advisory lock, so that
concurrent writers queue on it instead of deadlocking on days taken in different orders.
The update trigger also fires on the updates that move the map's cells (migration
0025), and its name sorts before the map's, so that the lock is taken before the map's
level-0 row in every transaction: the two summaries cannot deadlock each other.

Existing assets are counted here.

Revision ID: 0029
Revises: 0028
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0029"
down_revision = "0028"
branch_labels = None
depends_on = None

# pipeline.library.timeline.SUMMARY_LOCK: the advisory lock of the asset summaries.
SUMMARY_LOCK = 0x7069705F64617973  # "pip_days"

_DAY = "substr({row}.taken_local, 1, 10)"


def _sqlite_add(row: str) -> str:
    return (
        f"INSERT INTO timeline_days (day, count) SELECT {_DAY.format(row=row)}, 1"
        f" WHERE {row}.live_of IS NULL"
        " ON CONFLICT (day) DO UPDATE SET count = count + 1;"
    )


def _sqlite_remove(row: str) -> str:
    day = _DAY.format(row=row)
    return (
        f"UPDATE timeline_days SET count = count - 1 WHERE {row}.live_of IS NULL AND day = {day};"
        f" DELETE FROM timeline_days WHERE {row}.live_of IS NULL AND day = {day}"
        " AND count <= 0;"
    )


_SQLITE_CHANGED = (
    "substr(OLD.taken_local, 1, 10) IS NOT substr(NEW.taken_local, 1, 10)"
    " OR OLD.live_of IS NOT NEW.live_of"
)
SQLITE_TRIGGERS = [
    f"CREATE TRIGGER assets_days_insert AFTER INSERT ON assets BEGIN {_sqlite_add('NEW')} END",
    f"CREATE TRIGGER assets_days_delete AFTER DELETE ON assets BEGIN {_sqlite_remove('OLD')} END",
    "CREATE TRIGGER assets_days_update AFTER UPDATE OF taken_local, live_of ON assets"
    f" WHEN {_SQLITE_CHANGED} BEGIN {_sqlite_remove('OLD')} {_sqlite_add('NEW')} END",
]

POSTGRESQL_FUNCTION = f"""
CREATE FUNCTION assets_timeline_days() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_advisory_xact_lock({SUMMARY_LOCK});
  IF TG_OP = 'UPDATE'
     AND substr(OLD.taken_local, 1, 10) IS NOT DISTINCT FROM substr(NEW.taken_local, 1, 10)
     AND OLD.live_of IS NOT DISTINCT FROM NEW.live_of THEN
    RETURN NULL;  -- fired for the lock only (a move on the map)
  END IF;
  IF TG_OP <> 'INSERT' AND OLD.live_of IS NULL THEN
    UPDATE timeline_days SET count = count - 1 WHERE day = substr(OLD.taken_local, 1, 10);
    DELETE FROM timeline_days WHERE day = substr(OLD.taken_local, 1, 10) AND count <= 0;
  END IF;
  IF TG_OP <> 'DELETE' AND NEW.live_of IS NULL THEN
    INSERT INTO timeline_days AS t (day, count) VALUES (substr(NEW.taken_local, 1, 10), 1)
    ON CONFLICT (day) DO UPDATE SET count = t.count + 1;
  END IF;
  RETURN NULL;
END $$"""

# The columns and condition of the map's update trigger (0025) as well as the day's.
_PG_CHANGED = (
    "substr(OLD.taken_local, 1, 10) IS DISTINCT FROM substr(NEW.taken_local, 1, 10)"
    " OR OLD.live_of IS DISTINCT FROM NEW.live_of"
    " OR OLD.map_cell IS DISTINCT FROM NEW.map_cell"
    " OR OLD.gps_latitude IS DISTINCT FROM NEW.gps_latitude"
    " OR OLD.gps_longitude IS DISTINCT FROM NEW.gps_longitude"
)
POSTGRESQL_TRIGGERS = [
    "CREATE TRIGGER assets_days_insert_delete AFTER INSERT OR DELETE ON assets"
    " FOR EACH ROW EXECUTE FUNCTION assets_timeline_days()",
    "CREATE TRIGGER assets_days_update AFTER UPDATE OF taken_local, live_of, map_cell,"
    f" gps_latitude, gps_longitude ON assets FOR EACH ROW WHEN ({_PG_CHANGED})"
    " EXECUTE FUNCTION assets_timeline_days()",
]


def upgrade() -> None:
    bind = op.get_bind()
    op.create_table(
        "timeline_days",
        sa.Column("day", sa.String(10), nullable=False),
        sa.Column("count", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("day", name=op.f("pk_timeline_days")),
    )
    bind.execute(
        sa.text(
            "INSERT INTO timeline_days (day, count) SELECT substr(taken_local, 1, 10), count(*)"
            " FROM assets WHERE live_of IS NULL GROUP BY substr(taken_local, 1, 10)"
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
        for name in ("assets_days_insert", "assets_days_delete", "assets_days_update"):
            bind.execute(sa.text(f"DROP TRIGGER {name}"))
    else:
        for name in ("assets_days_insert_delete", "assets_days_update"):
            bind.execute(sa.text(f"DROP TRIGGER {name} ON assets"))
        bind.execute(sa.text("DROP FUNCTION assets_timeline_days()"))
    op.drop_table("timeline_days")
