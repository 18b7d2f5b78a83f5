"""videos and Live Photos: an asset's kind, its video facts, Apple's content
identifier, the Live Photo pairing (live_of on the motion part) and Motion Photos

Revision ID: 0014
Revises: 0013
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing assets are photos: the defaults fill them in place.
    op.add_column(
        "assets",
        sa.Column("kind", sa.String(length=8), server_default=sa.text("'photo'"), nullable=False),
    )
    op.add_column("assets", sa.Column("duration_seconds", sa.Float(), nullable=True))
    op.add_column("assets", sa.Column("video_codec", sa.String(length=32), nullable=True))
    op.add_column("assets", sa.Column("frame_rate", sa.Float(), nullable=True))
    op.add_column("assets", sa.Column("content_identifier", sa.String(length=100), nullable=True))
    op.add_column("assets", sa.Column("live_of", sa.BigInteger(), nullable=True))
    op.add_column(
        "assets",
        sa.Column("is_motion_photo", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    op.create_index("ix_assets_content_identifier", "assets", ["content_identifier"])
    op.create_index("ix_assets_live_of", "assets", ["live_of"])


def downgrade() -> None:
    op.drop_index("ix_assets_live_of", table_name="assets")
    op.drop_index("ix_assets_content_identifier", table_name="assets")
    for column in (
        "is_motion_photo",
        "live_of",
        "content_identifier",
        "frame_rate",
        "video_codec",
        "duration_seconds",
        "kind",
    ):
        op.drop_column("assets", column)
