"""job interruptions: infrastructure failures counted apart from handler attempts

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "jobs",
        sa.Column("interruptions", sa.Integer(), server_default=sa.text("0"), nullable=False),
    )


def downgrade() -> None:
    # SQLite >= 3.35 drops a column in place (no table copy losing partial indexes).
    op.drop_column("jobs", "interruptions")
