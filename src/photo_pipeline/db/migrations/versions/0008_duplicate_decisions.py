"""duplicate decisions: keepers chosen in a review

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "duplicate_decisions",
        sa.Column("group_key", sa.String(length=64), nullable=False),
        sa.Column("keep", sa.JSON(), nullable=False),
        sa.Column("decided_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("group_key", name=op.f("pk_duplicate_decisions")),
    )


def downgrade() -> None:
    op.drop_table("duplicate_decisions")
