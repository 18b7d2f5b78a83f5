"""XMP sidecars (pipeline.xmp): when each curation field last changed
(curation_field_changes), each asset's sidecar as last written or read (xmp_sidecars),
and the journal of xmp_write jobs, for their undo (xmp_entries).

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)


def _asset_id(table: str) -> sa.Column[int]:
    return sa.Column(
        "asset_id",
        _ID,
        sa.ForeignKey("assets.id", name=f"fk_{table}_asset_id_assets", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "curation_field_changes",
        _asset_id("curation_field_changes"),
        sa.Column("field", sa.String(length=16), nullable=False),
        sa.Column("changed_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", "field", name="pk_curation_field_changes"),
    )
    op.create_table(
        "xmp_sidecars",
        _asset_id("xmp_sidecars"),
        sa.Column("path", sa.Text()),
        sa.Column("fields", sa.JSON()),
        sa.Column("stamp", sa.String(length=64)),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("message", sa.Text()),
        sa.Column("synced_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", name="pk_xmp_sidecars"),
    )
    op.create_table(
        "xmp_entries",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("asset_id", sa.BigInteger(), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("existed", sa.Boolean(), nullable=False),
        sa.Column("old_bytes", sa.LargeBinary()),
        sa.Column("new_sha256", sa.String(length=64)),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("written_at", Micros(), nullable=False),
        sa.Column("undo_job_id", sa.String(length=36)),
        sa.Column("undone_at", Micros()),
        sa.PrimaryKeyConstraint("id", name="pk_xmp_entries"),
        sa.UniqueConstraint("job_id", "asset_id", name="uq_xmp_entries_job_id_asset_id"),
    )


def downgrade() -> None:
    op.drop_table("xmp_entries")
    op.drop_table("xmp_sidecars")
    op.drop_table("curation_field_changes")
