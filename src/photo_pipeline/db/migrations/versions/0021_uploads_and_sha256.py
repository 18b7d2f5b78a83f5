"""uploads: assets.sha256 (read with the BLAKE3, indexed: the upload pre-check) and the
uploads table of tus uploads (pipeline.uploads). Existing assets keep sha256 NULL until
a scan reads one of their files again (``import --reread`` reads them all).

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("assets", sa.Column("sha256", sa.String(length=64), nullable=True))
    op.create_index("ix_assets_sha256", "assets", ["sha256"])
    op.create_table(
        "uploads",
        sa.Column("id", sa.String(length=32), nullable=False),
        sa.Column("device", sa.String(length=64), nullable=False),
        sa.Column("filename", sa.Text(), nullable=False),
        sa.Column("length", sa.BigInteger(), nullable=False),
        sa.Column("mtime_ns", sa.BigInteger(), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("expires_at", Micros(), nullable=False),
        sa.Column("finished_at", Micros(), nullable=True),
        sa.Column("placed", sa.Text(), nullable=True),
        sa.Column("catalogued_at", Micros(), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_uploads")),
    )
    op.create_index("ix_uploads_created_at", "uploads", ["created_at"])
    op.create_index("ix_uploads_expires_at", "uploads", ["expires_at"])


def downgrade() -> None:
    op.drop_index("ix_uploads_expires_at", table_name="uploads")
    op.drop_index("ix_uploads_created_at", table_name="uploads")
    op.drop_table("uploads")
    op.drop_index("ix_assets_sha256", table_name="assets")
    op.drop_column("assets", "sha256")
