"""assets.renditions_fingerprint: the settings fingerprint every kind of an asset's
renditions was made with (NULL while one is missing or they differ), indexed, so that
a render with nothing to do finds no stale asset in the index instead of counting
every asset's renditions

Filled here from the renditions already recorded; pipeline.renditions.rows keeps it with
their rows from then on.

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

# pipeline.renditions.rows.KINDS, as they were at this revision.
KINDS = ("thumbnail", "preview")


def upgrade() -> None:
    op.add_column("assets", sa.Column("renditions_fingerprint", sa.String(length=16)))
    kinds = ", ".join(f"'{kind}'" for kind in KINDS)
    op.execute(
        "UPDATE assets SET renditions_fingerprint = ("
        " SELECT min(r.fingerprint) FROM renditions r"
        f" WHERE r.asset_id = assets.id AND r.kind IN ({kinds})"
        f" HAVING count(*) = {len(KINDS)} AND min(r.fingerprint) = max(r.fingerprint))"
        " WHERE id IN (SELECT asset_id FROM renditions)"
    )
    op.create_index("ix_assets_renditions_fingerprint", "assets", ["renditions_fingerprint"])


def downgrade() -> None:
    op.drop_index("ix_assets_renditions_fingerprint", table_name="assets")
    op.drop_column("assets", "renditions_fingerprint")
