"""Curation: favourite, rating and reject flag per asset (asset_curation, with a change
version), the outbox of changes an XMP writer has not written yet (curation_pending),
tags (hierarchical keywords, asset_tags) and albums (album_assets).

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)


def _asset_id(table: str) -> sa.Column[int]:
    """The asset a row of ``table`` is about; the row goes with the asset."""
    return sa.Column(
        "asset_id",
        _ID,
        sa.ForeignKey("assets.id", name=f"fk_{table}_asset_id_assets", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "asset_curation",
        _asset_id("asset_curation"),
        sa.Column("rating", sa.SmallInteger(), nullable=False, server_default=sa.text("0")),
        sa.Column("favorite", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("rejected", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("curated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", name="pk_asset_curation"),
    )
    op.create_table(
        "curation_pending",
        _asset_id("curation_pending"),
        sa.Column("version", sa.BigInteger(), nullable=False),
        sa.Column("changed_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", name="pk_curation_pending"),
    )
    op.create_index("ix_curation_pending_changed_at", "curation_pending", ["changed_at"])
    op.create_table(
        "tags",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("path", sa.String(length=500), nullable=False),
        sa.Column("key", sa.String(length=500), nullable=False),
        sa.Column("created_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_tags"),
        sa.UniqueConstraint("key", name="uq_tags_key"),
    )
    op.create_table(
        "asset_tags",
        _asset_id("asset_tags"),
        sa.Column(
            "tag_id",
            _ID,
            sa.ForeignKey("tags.id", name="fk_asset_tags_tag_id_tags", ondelete="CASCADE"),
            nullable=False,
        ),
        sa.Column("tagged_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", "tag_id", name="pk_asset_tags"),
    )
    op.create_index("ix_asset_tags_tag_id_asset_id", "asset_tags", ["tag_id", "asset_id"])
    op.create_table(
        "albums",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column(
            "cover_asset_id",
            _ID,
            sa.ForeignKey("assets.id", name="fk_albums_cover_asset_id_assets", ondelete="SET NULL"),
        ),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_albums"),
        sa.UniqueConstraint("key", name="uq_albums_key"),
    )
    op.create_table(
        "album_assets",
        sa.Column(
            "album_id",
            _ID,
            sa.ForeignKey("albums.id", name="fk_album_assets_album_id_albums", ondelete="CASCADE"),
            nullable=False,
        ),
        _asset_id("album_assets"),
        sa.Column("added_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("album_id", "asset_id", name="pk_album_assets"),
    )
    op.create_index("ix_album_assets_asset_id", "album_assets", ["asset_id"])


def downgrade() -> None:
    op.drop_index("ix_album_assets_asset_id", table_name="album_assets")
    op.drop_table("album_assets")
    op.drop_table("albums")
    op.drop_index("ix_asset_tags_tag_id_asset_id", table_name="asset_tags")
    op.drop_table("asset_tags")
    op.drop_table("tags")
    op.drop_index("ix_curation_pending_changed_at", table_name="curation_pending")
    op.drop_table("curation_pending")
    op.drop_table("asset_curation")
