"""near duplicates found incrementally: each paired hash's chunks in near_chunks,
looked up by the assets added since the last run, and the chunk layout in near_index

A library paired before this revision has no chunks stored (chunk_bits NULL): its next
`similar` run regroups everything once and stores them.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

AssetRef = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("near_index", sa.Column("chunk_bits", sa.String(length=40), nullable=True))
    op.create_table(
        "near_chunks",
        sa.Column("chunk", sa.SmallInteger(), nullable=False),
        sa.Column("value", sa.Integer(), nullable=False),
        sa.Column("asset_id", AssetRef, nullable=False),
        sa.Column("phash", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("chunk", "value", "asset_id", name=op.f("pk_near_chunks")),
        sqlite_with_rowid=False,
    )
    op.create_index(
        "ix_near_chunks_asset_id",
        "near_chunks",
        ["asset_id"],
        sqlite_where=sa.text("chunk = 0"),
        postgresql_where=sa.text("chunk = 0"),
    )


def downgrade() -> None:
    op.drop_index("ix_near_chunks_asset_id", table_name="near_chunks")
    op.drop_table("near_chunks")
    op.drop_column("near_index", "chunk_bits")
