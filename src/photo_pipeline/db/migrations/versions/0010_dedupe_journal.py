"""dedupe journal: copies moved into the quarantine, to resume, undo and purge

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

# Frozen copies of the schema's types at this revision.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "dedupe_entries",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(length=36), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("group_key", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.String(length=32), nullable=False),
        sa.Column("file_id", sa.BigInteger(), nullable=True),
        sa.Column("source_id", sa.BigInteger(), nullable=False),
        sa.Column("source_path", sa.Text(), nullable=False),
        sa.Column("quarantine_path", sa.Text(), nullable=False),
        sa.Column("content_hash", sa.String(length=64), nullable=False),
        sa.Column("size", sa.BigInteger(), nullable=False),
        sa.Column("keeper_source_id", sa.BigInteger(), nullable=False),
        sa.Column("keeper_path", sa.Text(), nullable=False),
        sa.Column("keeper_hash", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("error_code", sa.String(length=100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("quarantined_at", Micros(), nullable=True),
        sa.Column("undo_job_id", sa.String(length=36), nullable=True),
        sa.Column("purge_job_id", sa.String(length=36), nullable=True),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_dedupe_entries")),
        sa.UniqueConstraint("job_id", "seq", name=op.f("uq_dedupe_entries_job_id_seq")),
    )
    op.create_index("ix_dedupe_entries_state", "dedupe_entries", ["state"])


def downgrade() -> None:
    op.drop_index("ix_dedupe_entries_state", table_name="dedupe_entries")
    op.drop_table("dedupe_entries")
