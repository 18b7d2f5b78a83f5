"""files.sidecars: the sidecars (XMP, Google Takeout JSON) a file was last read with,
each as name, size and mtime, so that the scan that reads it again knows whether its
asset must follow them (pipeline.ingest.sidecars). NULL: none, or read before this revision.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("files", sa.Column("sidecars", sa.Text()))


def downgrade() -> None:
    op.drop_column("files", "sidecars")
