"""event cursor never reused: job_events AUTOINCREMENT on SQLite

Without AUTOINCREMENT, SQLite hands out max(rowid) + 1, so pruning the newest events
would let new events reuse numbers a client has already seen. PostgreSQL sequences
never go back; nothing changes there.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-29
"""

from __future__ import annotations

from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def _recreate(autoincrement: bool) -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    with op.batch_alter_table(
        "job_events", recreate="always", table_kwargs={"sqlite_autoincrement": autoincrement}
    ):
        pass


def upgrade() -> None:
    _recreate(True)


def downgrade() -> None:
    _recreate(False)
