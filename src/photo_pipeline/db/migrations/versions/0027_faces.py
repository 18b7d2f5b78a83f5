"""Faces and people (pipeline.faces): people (named or not), faces found in each asset's
preview (box, landmarks, embedding, how it came to its person) and face_scans (the
assets looked at, and how many faces were skipped there).

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-02
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
Micros = sa.BigInteger  # UTC microseconds since the epoch (db.schema.UTCDateTime)


def _asset_id(table: str) -> sa.Column[int]:
    return sa.Column(
        "asset_id",
        _ID,
        sa.ForeignKey("assets.id", name=f"fk_{table}_asset_id_assets", ondelete="CASCADE"),
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "people",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        sa.Column("name", sa.String(length=200)),
        sa.Column("key", sa.String(length=200)),
        sa.Column("created_at", Micros(), nullable=False),
        sa.Column("updated_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_people"),
        sa.UniqueConstraint("key", name="uq_people_key"),
    )
    op.create_table(
        "faces",
        sa.Column("id", _ID, primary_key=True, autoincrement=True),
        _asset_id("faces"),
        sa.Column("ordinal", sa.SmallInteger(), nullable=False),
        sa.Column("box_left", sa.Float(), nullable=False),
        sa.Column("box_top", sa.Float(), nullable=False),
        sa.Column("box_width", sa.Float(), nullable=False),
        sa.Column("box_height", sa.Float(), nullable=False),
        sa.Column("landmarks", sa.JSON(), nullable=False),
        sa.Column("embedding", sa.LargeBinary(), nullable=False),
        sa.Column("score", sa.Float(), nullable=False),
        sa.Column("sharpness", sa.Float(), nullable=False),
        sa.Column(
            "person_id",
            _ID,
            sa.ForeignKey("people.id", name="fk_faces_person_id_people", ondelete="SET NULL"),
        ),
        sa.Column("assigned", sa.String(length=8)),
        sa.Column("not_face", sa.Boolean(), nullable=False, server_default=sa.false()),
        sa.Column("created_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_faces"),
        sa.UniqueConstraint("asset_id", "ordinal", name="uq_faces_asset_id_ordinal"),
    )
    op.create_index("ix_faces_person_id", "faces", ["person_id"])
    op.create_table(
        "face_scans",
        _asset_id("face_scans"),
        sa.Column("faces", sa.Integer(), nullable=False),
        sa.Column("too_small", sa.Integer(), nullable=False),
        sa.Column("blurred", sa.Integer(), nullable=False),
        sa.Column("scanned_at", Micros(), nullable=False),
        sa.PrimaryKeyConstraint("asset_id", name="pk_face_scans"),
    )


def downgrade() -> None:
    op.drop_table("face_scans")
    op.drop_index("ix_faces_person_id", table_name="faces")
    op.drop_table("faces")
    op.drop_table("people")
