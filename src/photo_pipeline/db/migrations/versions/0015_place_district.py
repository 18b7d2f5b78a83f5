"""a capture's district: the nearest GeoNames place when the city is the larger place
a person would name there (Mitte in Berlin, Kabukicho in Tokyo)

Assets catalogued before keep their city (which may be a district's name) and no
district until ``photo-pipeline places --refresh`` works their places out again.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("assets", sa.Column("district", sa.String(length=200), nullable=True))


def downgrade() -> None:
    op.drop_column("assets", "district")
