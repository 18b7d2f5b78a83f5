"""claim index per job type: claim([types]) walks only its own types' queues

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-30
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

# Frozen copy of the claimable predicate at this revision (db.schema).
CLAIMABLE = "state IN ('queued', 'retry_queued') AND waiting_for = 0"


def _claim_index(columns: list[str | sa.ColumnElement[Any]]) -> None:
    op.create_index(
        "ix_jobs_claim_order",
        "jobs",
        columns,
        sqlite_where=sa.text(CLAIMABLE),
        postgresql_where=sa.text(CLAIMABLE),
    )


def upgrade() -> None:
    op.drop_index("ix_jobs_claim_order", table_name="jobs")
    _claim_index(["job_type", sa.literal_column("priority DESC"), "run_after", "seq"])


def downgrade() -> None:
    op.drop_index("ix_jobs_claim_order", table_name="jobs")
    _claim_index([sa.literal_column("priority DESC"), "run_after", "seq"])
