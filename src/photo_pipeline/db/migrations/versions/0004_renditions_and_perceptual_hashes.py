"""renditions and perceptual hashes

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Frozen copies of the schema's types at this revision.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # assets.phash exists since 0003; the `similar` job fills it.
    op.create_table(
        "renditions",
        sa.Column("asset_id", BigId, nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("format", sa.String(length=8), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("fingerprint", sa.String(length=16), nullable=False),
        sa.Column("warning", sa.Text(), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"],
            ["assets.id"],
            name=op.f("fk_renditions_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("asset_id", "kind", name=op.f("pk_renditions")),
    )
    op.create_table(
        "near_duplicates",
        sa.Column("asset_id", BigId, autoincrement=False, nullable=False),
        sa.Column("group_id", sa.BigInteger(), nullable=False),
        sa.Column("distance", sa.Integer(), nullable=False),
        sa.Column("created_at", Micros(), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"],
            ["assets.id"],
            name=op.f("fk_near_duplicates_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("asset_id", name=op.f("pk_near_duplicates")),
    )
    op.create_index("ix_near_duplicates_group_id", "near_duplicates", ["group_id"])


def downgrade() -> None:
    op.drop_table("near_duplicates")
    op.drop_table("renditions")
