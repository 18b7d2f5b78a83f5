"""workers: the registry of worker processes

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)


def upgrade() -> None:
    op.create_table(
        "workers",
        sa.Column("id", sa.String(200), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column("job_types", sa.JSON(), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("started_at", Micros(), nullable=False),
        sa.Column("heartbeat_at", Micros(), nullable=False),
        sa.Column("stopped_at", Micros(), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_workers"),
    )
    op.create_index("ix_workers_host_state", "workers", ["host", "state"])


def downgrade() -> None:
    op.drop_table("workers")
