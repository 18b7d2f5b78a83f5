"""capture zones and places

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import sqlalchemy as sa
from alembic import op

# Frozen copies of the schema's types at this revision.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_EPOCH = datetime(1970, 1, 1)  # naive: taken_local is a naive wall clock
_BATCH = 1000


def _asset_columns() -> list[sa.Column[Any]]:
    return [
        sa.Column("tz_name", sa.String(length=64), nullable=True),
        sa.Column("tz_source", sa.String(length=16), nullable=True),
        sa.Column("country_code", sa.String(length=2), nullable=True),
        sa.Column("country", sa.String(length=100), nullable=True),
        sa.Column("region", sa.String(length=200), nullable=True),
        sa.Column("city", sa.String(length=200), nullable=True),
        sa.Column("taken_order", Micros(), nullable=True),
    ]


def upgrade() -> None:
    for column in _asset_columns():
        op.add_column("assets", column)
    _fill_taken_order()
    op.create_index("ix_assets_taken_order", "assets", ["taken_order"])
    op.create_table(
        "timeshift_entries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("asset_id", BigId, nullable=False),
        sa.Column("old_taken_local", sa.String(length=32), nullable=False),
        sa.Column("old_taken_offset_minutes", sa.Integer(), nullable=True),
        sa.Column("old_taken_utc", Micros(), nullable=True),
        sa.Column("old_taken_order", Micros(), nullable=True),
        sa.Column("old_tz_name", sa.String(length=64), nullable=True),
        sa.Column("new_taken_local", sa.String(length=32), nullable=False),
        sa.Column("new_taken_offset_minutes", sa.Integer(), nullable=True),
        sa.Column("new_taken_utc", Micros(), nullable=True),
        sa.Column("new_taken_order", Micros(), nullable=True),
        sa.Column("new_tz_name", sa.String(length=64), nullable=True),
        sa.Column("shifted_at", Micros(), nullable=False),
        sa.Column("undo_job_id", sa.String(length=36), nullable=True),
        sa.Column("undone_at", Micros(), nullable=True),
        sa.ForeignKeyConstraint(
            ["asset_id"],
            ["assets.id"],
            name=op.f("fk_timeshift_entries_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_timeshift_entries")),
        sa.UniqueConstraint(
            "job_id", "asset_id", name=op.f("uq_timeshift_entries_job_id_asset_id")
        ),
    )
    op.create_index("ix_timeshift_entries_asset_id", "timeshift_entries", ["asset_id"])


def _fill_taken_order() -> None:
    """Existing assets: the UTC instant when known, else the wall clock read as UTC.
    Zones and places stay NULL for the ``places`` backfill job."""
    assets = sa.table(
        "assets",
        sa.column("id", sa.BigInteger),
        sa.column("taken_local", sa.String),
        sa.column("taken_utc", sa.BigInteger),
        sa.column("taken_order", sa.BigInteger),
    )
    bind = op.get_bind()
    bind.execute(
        assets.update()
        .where(assets.c.taken_utc.is_not(None))
        .values(taken_order=assets.c.taken_utc)
    )
    after = 0
    while True:
        rows = bind.execute(
            sa.select(assets.c.id, assets.c.taken_local)
            .where(assets.c.taken_order.is_(None), assets.c.id > after)
            .order_by(assets.c.id)
            .limit(_BATCH)
        ).all()
        if not rows:
            return
        bind.execute(
            assets.update()
            .where(assets.c.id == sa.bindparam("row_id"))
            .values(taken_order=sa.bindparam("order")),
            [{"row_id": row.id, "order": _micros(row.taken_local)} for row in rows],
        )
        after = rows[-1].id


def _micros(taken_local: str) -> int:
    local = datetime.fromisoformat(taken_local).replace(tzinfo=None)
    return (local - _EPOCH) // timedelta(microseconds=1)


def downgrade() -> None:
    op.drop_index("ix_timeshift_entries_asset_id", table_name="timeshift_entries")
    op.drop_table("timeshift_entries")
    op.drop_index("ix_assets_taken_order", table_name="assets")
    for column in reversed(_asset_columns()):
        op.drop_column("assets", column.name)
