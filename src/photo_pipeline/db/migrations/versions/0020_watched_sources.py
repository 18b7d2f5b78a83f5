"""watched sources: sources.watch, and source_watchers, the lease of the one watcher of
each watched source (pipeline.watch)

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None

# Frozen copies of the schema's types at this revision.
SourceId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)


def upgrade() -> None:
    op.add_column(
        "sources", sa.Column("watch", sa.Boolean(), server_default=sa.false(), nullable=False)
    )
    op.create_table(
        "source_watchers",
        sa.Column("source_id", SourceId, nullable=False),
        sa.Column("holder", sa.String(200), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("mode", sa.String(16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("acquired_at", Micros(), nullable=False),
        sa.Column("heartbeat_at", Micros(), nullable=False),
        sa.Column("expires_at", Micros(), nullable=False),
        sa.Column("pending_since", Micros(), nullable=True),
        sa.Column("pending", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.ForeignKeyConstraint(
            ["source_id"],
            ["sources.id"],
            name="fk_source_watchers_source_id_sources",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("source_id", name="pk_source_watchers"),
    )


def downgrade() -> None:
    op.drop_table("source_watchers")
    op.drop_column("sources", "watch")
