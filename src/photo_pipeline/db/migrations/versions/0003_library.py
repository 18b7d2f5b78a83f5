"""library: sources, files, assets

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Frozen copies of the schema's types at this revision.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "assets",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("format", sa.String(length=16), nullable=False),
        sa.Column("mime", sa.String(length=64), nullable=False),
        sa.Column("width", sa.Integer(), nullable=False),
        sa.Column("height", sa.Integer(), nullable=False),
        sa.Column("orientation", sa.Integer(), nullable=False),
        sa.Column("taken_local", sa.String(length=32), nullable=False),
        sa.Column("taken_offset_minutes", sa.Integer(), nullable=True),
        sa.Column("taken_utc", Micros(), nullable=True),
        sa.Column("taken_source", sa.String(length=20), nullable=False),
        sa.Column("make", sa.String(length=200), nullable=True),
        sa.Column("model", sa.String(length=200), nullable=True),
        sa.Column("lens", sa.String(length=200), nullable=True),
        sa.Column("focal_length_mm", sa.Float(), nullable=True),
        sa.Column("f_number", sa.Float(), nullable=True),
        sa.Column("exposure_seconds", sa.Float(), nullable=True),
        sa.Column("iso", sa.Integer(), nullable=True),
        sa.Column("gps_latitude", sa.Float(), nullable=True),
        sa.Column("gps_longitude", sa.Float(), nullable=True),
        sa.Column("gps_altitude", sa.Float(), nullable=True),
        sa.Column("phash", sa.String(length=16), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_assets")),
        sa.UniqueConstraint("content_hash", name=op.f("uq_assets_content_hash")),
    )
    op.create_index("ix_assets_make_model", "assets", ["make", "model"])
    op.create_index("ix_assets_taken_local", "assets", ["taken_local"])

    op.create_table(
        "sources",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("added_at", Micros(), nullable=False),
        sa.Column("scanned_at", Micros(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sources")),
        sa.UniqueConstraint("path", name=op.f("uq_sources_path")),
    )
    op.create_table(
        "files",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("source_id", BigId, nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=False),
        sa.Column("inode", sa.BigInteger(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("asset_id", BigId, nullable=True),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"], ["assets.id"], name=op.f("fk_files_asset_id_assets"), ondelete="SET NULL"
        ),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name=op.f("fk_files_source_id_sources"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_files")),
        sa.UniqueConstraint("source_id", "path", name=op.f("uq_files_source_id_path")),
    )
    op.create_index("ix_files_asset_id", "files", ["asset_id"])


def downgrade() -> None:
    op.drop_table("files")
    op.drop_table("sources")
    op.drop_table("assets")
