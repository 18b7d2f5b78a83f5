"""job tables: jobs, items, events, prerequisites

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

from typing import TypedDict

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the schema at this revision: migrations never import live models.
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)
ACTIVE = "state IN ('queued', 'running', 'cancelling', 'retry_queued') AND lock_key IS NOT NULL"
CLAIMABLE = "state IN ('queued', 'retry_queued') AND waiting_for = 0"
LEASED = "state IN ('running', 'cancelling')"


class _PartialIndex(TypedDict):
    """``create_index`` keyword arguments: the index covers the rows where ``where``."""

    sqlite_where: sa.TextClause
    postgresql_where: sa.TextClause


def _partial(where: str) -> _PartialIndex:
    return {"sqlite_where": sa.text(where), "postgresql_where": sa.text(where)}


def _job_fk(column: str, table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        [column], ["jobs.id"], name=f"fk_{table}_{column}_jobs", ondelete="CASCADE"
    )


def upgrade() -> None:
    op.create_table(
        "jobs",
        sa.Column("seq", BigId, autoincrement=True, nullable=False),
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("job_type", sa.String(100), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("request_hash", sa.String(64), nullable=False),
        sa.Column("lock_key", sa.String(200), nullable=True),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("waiting_for", sa.Integer(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("run_after", Micros(), nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_expires_at", Micros(), nullable=True),
        sa.Column("heartbeat_at", Micros(), nullable=True),
        sa.Column("fencing_token", sa.BigInteger(), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.Column("started_at", Micros(), nullable=True),
        sa.Column("finished_at", Micros(), nullable=True),
        sa.PrimaryKeyConstraint("seq", name="pk_jobs"),
        sa.UniqueConstraint("id", name="uq_jobs_id"),
        sa.UniqueConstraint("idempotency_key", name="uq_jobs_idempotency_key"),
    )
    op.create_index(
        "ix_jobs_claim_order",
        "jobs",
        [sa.literal_column("priority DESC"), "run_after", "seq"],
        **_partial(CLAIMABLE),
    )
    op.create_index("ix_jobs_finished_at", "jobs", ["finished_at"])
    op.create_index("ix_jobs_lease_expiry", "jobs", ["lease_expires_at"], **_partial(LEASED))
    op.create_index("uq_jobs_active_lock", "jobs", ["lock_key"], unique=True, **_partial(ACTIVE))

    op.create_table(
        "job_events",
        sa.Column("seq", BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("event_type", sa.String(50), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column("data", sa.JSON(), nullable=True),
        sa.Column("created_at", Micros(), nullable=False),
        _job_fk("job_id", "job_events"),
        sa.PrimaryKeyConstraint("seq", name="pk_job_events"),
    )
    op.create_index("ix_job_events_job_id_seq", "job_events", ["job_id", "seq"])

    op.create_table(
        "job_items",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("item_key", sa.String(2048), nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("attempt_count", sa.Integer(), nullable=False),
        sa.Column("error_code", sa.String(100), nullable=True),
        sa.Column("error_message", sa.Text(), nullable=True),
        sa.Column("updated_at", Micros(), nullable=False),
        _job_fk("job_id", "job_items"),
        sa.PrimaryKeyConstraint("id", name="pk_job_items"),
        sa.UniqueConstraint("job_id", "item_key", name="uq_job_items_job_id_item_key"),
    )
    op.create_index("ix_job_items_job_id_state_id", "job_items", ["job_id", "state", "id"])

    op.create_table(
        "job_prerequisites",
        sa.Column("job_id", sa.String(36), nullable=False),
        sa.Column("prerequisite_id", sa.String(36), nullable=False),
        _job_fk("job_id", "job_prerequisites"),
        _job_fk("prerequisite_id", "job_prerequisites"),
        sa.PrimaryKeyConstraint("job_id", "prerequisite_id", name="pk_job_prerequisites"),
    )
    op.create_index(
        "ix_job_prerequisites_prerequisite_id", "job_prerequisites", ["prerequisite_id"]
    )


def downgrade() -> None:
    op.drop_table("job_prerequisites")
    op.drop_table("job_items")
    op.drop_table("job_events")
    op.drop_table("jobs")
