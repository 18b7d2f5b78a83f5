"""asset_search: the words each asset is searched by (pipeline.search_index),
and the database's own index of them: on SQLite the FTS5 table asset_search_fts (its
external content is asset_search, kept in step by triggers; prefix indexes for 2, 3
and 4 letters), on PostgreSQL a GIN index on to_tsvector('simple', document).

Existing assets are indexed here. A migration may not import the pipeline, so the
backfill folds words by the same rules (``_words``: NFKD, marks dropped, case-folded,
split at non-letters) from the raw columns and file names; the brand spellings of
``media.camera_names`` that add a word (``HMD Global`` → Nokia) join when an asset is
written again (``import --reread``).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-02
"""

from __future__ import annotations

import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_WORD = re.compile(r"[^\W_]+")
_CHUNK = 1000

_SQLITE_INDEX = (
    "CREATE VIRTUAL TABLE asset_search_fts USING fts5(document, content='asset_search', "
    "content_rowid='asset_id', tokenize='unicode61 remove_diacritics 2', prefix='2 3 4')",
    "CREATE TRIGGER asset_search_ai AFTER INSERT ON asset_search BEGIN "
    "INSERT INTO asset_search_fts(rowid, document) VALUES (new.asset_id, new.document); END",
    "CREATE TRIGGER asset_search_ad AFTER DELETE ON asset_search BEGIN "
    "INSERT INTO asset_search_fts(asset_search_fts, rowid, document) "
    "VALUES ('delete', old.asset_id, old.document); END",
    "CREATE TRIGGER asset_search_au AFTER UPDATE ON asset_search BEGIN "
    "INSERT INTO asset_search_fts(asset_search_fts, rowid, document) "
    "VALUES ('delete', old.asset_id, old.document); "
    "INSERT INTO asset_search_fts(rowid, document) VALUES (new.asset_id, new.document); END",
)


def _words(text: str) -> list[str]:
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _WORD.findall(unicodedata.normalize("NFC", bare))


def _backfill(conn: sa.Connection) -> None:
    columns = "id, make, model, lens, city, district, region, country, country_code"
    after = -1
    while True:
        rows = conn.execute(
            sa.text(f"SELECT {columns} FROM assets WHERE id > :after ORDER BY id LIMIT {_CHUNK}"),
            {"after": after},
        ).all()
        if not rows:
            return
        after = rows[-1].id
        names: dict[int, list[str]] = {}
        for asset_id, path in conn.execute(
            sa.text(
                "SELECT asset_id, path FROM files WHERE asset_id BETWEEN :low AND :high "
                "AND state = 'present' ORDER BY id"
            ),
            {"low": rows[0].id, "high": after},
        ):
            names.setdefault(asset_id, []).append(path.rpartition("/")[2])
        documents = []
        for row in rows:
            parts = [*names.get(row.id, []), *row[1:]]
            seen: dict[str, None] = {}
            for part in parts:
                for word in _words(part or ""):
                    seen.setdefault(word, None)
            documents.append({"asset_id": row.id, "document": " ".join(seen)})
        conn.execute(
            sa.text("INSERT INTO asset_search (asset_id, document) VALUES (:asset_id, :document)"),
            documents,
        )


def upgrade() -> None:
    op.create_table(
        "asset_search",
        sa.Column("asset_id", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), nullable=False),
        sa.Column("document", sa.Text(), nullable=False),
        sa.ForeignKeyConstraint(
            ["asset_id"],
            ["assets.id"],
            name=op.f("fk_asset_search_asset_id_assets"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("asset_id", name=op.f("pk_asset_search")),
    )
    conn = op.get_bind()
    if conn.dialect.name == "sqlite":
        for statement in _SQLITE_INDEX:
            op.execute(statement)
    else:
        op.execute(
            "CREATE INDEX ix_asset_search_document ON asset_search "
            "USING gin (to_tsvector('simple', document))"
        )
    _backfill(conn)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.execute("DROP TABLE asset_search_fts")  # its triggers go with asset_search
    op.drop_table("asset_search")
