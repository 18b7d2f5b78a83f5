"""The filters' access paths (pipeline.library.filter_paths): indexes led by make, by
model and by each place column, then each listing order's key, and partial indexes of
the Motion Photos in those orders, so that a page filtered by camera, place or
type=live reads about a page of rows at a million assets, not every row before its
last match.

Revision ID: 0031
Revises: 0030
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0031"
down_revision = "0030"
branch_labels = None
depends_on = None

_BY_COLUMN = {
    "ix_assets_make_taken_order_id": ["make", "taken_order", "id"],
    "ix_assets_make_taken_local_id": ["make", "taken_local", "id"],
    "ix_assets_model_taken_order_id": ["model", "taken_order", "id"],
    "ix_assets_model_taken_local_id": ["model", "taken_local", "id"],
    "ix_assets_country_code_taken_order_id": ["country_code", "taken_order", "id"],
    "ix_assets_country_code_taken_local_id": ["country_code", "taken_local", "id"],
    "ix_assets_country_taken_order_id": ["country", "taken_order", "id"],
    "ix_assets_country_taken_local_id": ["country", "taken_local", "id"],
    "ix_assets_region_taken_order_id": ["region", "taken_order", "id"],
    "ix_assets_region_taken_local_id": ["region", "taken_local", "id"],
    "ix_assets_city_taken_order_id": ["city", "taken_order", "id"],
    "ix_assets_city_taken_local_id": ["city", "taken_local", "id"],
    "ix_assets_district_taken_order_id": ["district", "taken_order", "id"],
    "ix_assets_district_taken_local_id": ["district", "taken_local", "id"],
}
_MOTION_PHOTOS = {
    "ix_assets_motion_photo_taken_order_id": ["taken_order", "id"],
    "ix_assets_motion_photo_taken_local_id": ["taken_local", "id"],
}


def upgrade() -> None:
    for name, columns in _BY_COLUMN.items():
        op.create_index(name, "assets", columns)
    for name, columns in _MOTION_PHOTOS.items():
        op.create_index(
            name,
            "assets",
            columns,
            sqlite_where=sa.text("is_motion_photo IS 1"),
            postgresql_where=sa.text("is_motion_photo IS true"),
        )


def downgrade() -> None:
    for name in [*_MOTION_PHOTOS, *_BY_COLUMN]:
        op.drop_index(name, table_name="assets")
