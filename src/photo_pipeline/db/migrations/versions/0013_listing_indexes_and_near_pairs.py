"""listings at a million assets: keyset and present-file indexes, job listing
indexes, and the near-duplicate pairs that `similar` keeps between runs

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)
AssetRef = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.drop_index("ix_assets_taken_order", table_name="assets")
    op.create_index("ix_assets_taken_order_id", "assets", ["taken_order", "id"])
    op.create_index("ix_assets_updated_at", "assets", ["updated_at"])
    op.create_index(
        "ix_assets_unhashed",
        "assets",
        ["id"],
        sqlite_where=sa.text("phash IS NULL"),
        postgresql_where=sa.text("phash IS NULL"),
    )
    op.drop_index("ix_files_asset_id", table_name="files")
    op.create_index("ix_files_asset_id_state", "files", ["asset_id", "state"])
    op.create_index("ix_jobs_job_type_seq", "jobs", ["job_type", "seq"])
    op.create_index("ix_jobs_state_seq", "jobs", ["state", "seq"])
    op.create_table(
        "near_pairs",
        sa.Column("asset_id", AssetRef, nullable=False),
        sa.Column("other_id", AssetRef, nullable=False),
        sa.Column("distance", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"],
            ["assets.id"],
            name=op.f("fk_near_pairs_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["other_id"],
            ["assets.id"],
            name=op.f("fk_near_pairs_other_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("asset_id", "other_id", name=op.f("pk_near_pairs")),
    )
    op.create_index("ix_near_pairs_other_id", "near_pairs", ["other_id"])
    op.create_table(
        "near_index",
        sa.Column("id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("max_distance", sa.Integer(), nullable=False),
        sa.Column("radius", sa.Integer(), nullable=False),
        sa.Column("hashes", sa.BigInteger(), nullable=False),
        sa.Column("paired_until", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_near_index")),
    )


def downgrade() -> None:
    op.drop_table("near_index")
    op.drop_index("ix_near_pairs_other_id", table_name="near_pairs")
    op.drop_table("near_pairs")
    op.drop_index("ix_jobs_state_seq", table_name="jobs")
    op.drop_index("ix_jobs_job_type_seq", table_name="jobs")
    op.drop_index("ix_files_asset_id_state", table_name="files")
    op.create_index("ix_files_asset_id", "files", ["asset_id"])
    op.drop_index("ix_assets_unhashed", table_name="assets")
    op.drop_index("ix_assets_updated_at", table_name="assets")
    op.drop_index("ix_assets_taken_order_id", table_name="assets")
    op.create_index("ix_assets_taken_order", "assets", ["taken_order"])
