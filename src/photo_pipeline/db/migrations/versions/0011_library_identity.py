"""library identity: the id that the library home's marker file must carry

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "library_identity",
        sa.Column("id", sa.String(length=36), nullable=False),
        sa.Column("created_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_library_identity")),
    )


def downgrade() -> None:
    op.drop_table("library_identity")
