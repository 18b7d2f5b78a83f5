"""schedules (jobs.schedules): periodic jobs, by cron expression or interval; the
default schedules a new library is given once (library_identity.schedules_seeded:
libraries that exist already are left as they are); files.verified_at, for a verify
that checks the least recently verified files first.

Revision ID: 0019
Revises: 0018
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)
BigId = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "schedules",
        sa.Column("id", BigId, autoincrement=True, nullable=False),
        sa.Column("job_type", sa.String(length=100), nullable=False),
        sa.Column("params", sa.JSON(), nullable=False),
        sa.Column("cron", sa.String(length=200)),
        sa.Column("every_seconds", sa.BigInteger()),
        sa.Column("time_zone", sa.String(length=64), nullable=False),
        sa.Column("paused", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.Column("next_due", Micros(), nullable=False),
        sa.Column("last_tick", Micros()),
        sa.Column("pending_tick", Micros()),
        sa.Column("last_job_id", sa.String(length=36)),
        sa.Column("skipped_ticks", sa.Integer(), server_default=sa.text("0"), nullable=False),
        sa.Column("last_skipped_at", Micros()),
        sa.Column("last_skip_reason", sa.Text()),
        sa.Column("idempotency_key", sa.String(length=200)),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_schedules")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_schedules_idempotency_key")),
    )
    op.create_index(op.f("ix_schedules_next_due"), "schedules", ["next_due"])
    op.add_column(
        "library_identity",
        sa.Column("schedules_seeded", sa.Boolean(), server_default=sa.false(), nullable=False),
    )
    # A library that exists already keeps the schedules it has (none): defaults are
    # for new libraries.
    op.execute(sa.text("UPDATE library_identity SET schedules_seeded = :yes").bindparams(yes=True))
    op.add_column("files", sa.Column("verified_at", Micros()))


def downgrade() -> None:
    op.drop_column("files", "verified_at")
    op.drop_column("library_identity", "schedules_seeded")
    op.drop_index(op.f("ix_schedules_next_due"), table_name="schedules")
    op.drop_table("schedules")
