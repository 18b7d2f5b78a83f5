"""timeshift_entries.old_taken_source/new_taken_source: a timeshift that sets a date
(``timeshift --set``) makes the asset's date the user's (taken_source "user"), and its
undo gives back the source it replaced. NULL: the entry left the source as it was.

assets (taken_local, id) replaces the index on taken_local alone: the listing sorted by
local wall clock (``assets --sort taken``) is a keyset walk of it on both backends.

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("timeshift_entries", sa.Column("old_taken_source", sa.String(length=20)))
    op.add_column("timeshift_entries", sa.Column("new_taken_source", sa.String(length=20)))
    op.create_index("ix_assets_taken_local_id", "assets", ["taken_local", "id"])
    op.drop_index("ix_assets_taken_local", table_name="assets")


def downgrade() -> None:
    op.create_index("ix_assets_taken_local", "assets", ["taken_local"])
    op.drop_index("ix_assets_taken_local_id", table_name="assets")
    op.drop_column("timeshift_entries", "new_taken_source")
    op.drop_column("timeshift_entries", "old_taken_source")
