"""Search words of tags and albums (pipeline.search_index): the document of each asset
with a tag or in an album gets the words of their names, as the curation writers now
write them (each label's words after the asset's own, labels in order, none twice).

Revision ID: 0028
Revises: 0025
Create Date: 2026-12-02
"""

from __future__ import annotations

import re
import unicodedata

import sqlalchemy as sa
from alembic import op

revision = "0028"
down_revision = "0025"
branch_labels = None
depends_on = None

_WORD = re.compile(r"[^\W_]+")
_CHUNK = 1000


def _words(text: str) -> list[str]:
    """search_index.words as it was at this revision."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    bare = "".join(c for c in decomposed if not unicodedata.combining(c))
    return _WORD.findall(unicodedata.normalize("NFC", bare))


def _add_label_words(bind: sa.Connection) -> None:
    labels: dict[int, list[str]] = {}
    for asset_id, label in bind.execute(
        sa.text(
            "SELECT l.asset_id, t.path FROM asset_tags AS l JOIN tags AS t ON t.id = l.tag_id"
            " UNION ALL SELECT m.asset_id, a.name FROM album_assets AS m"
            " JOIN albums AS a ON a.id = m.album_id"
        )
    ):
        labels.setdefault(asset_id, []).append(label)
    ids = sorted(labels)
    for start in range(0, len(ids), _CHUNK):
        chunk = ids[start : start + _CHUNK]
        query = sa.text("SELECT asset_id, document FROM asset_search WHERE asset_id IN :ids")
        query = query.bindparams(sa.bindparam("ids", expanding=True))
        rows = bind.execute(query, {"ids": chunk}).all()
        updated = []
        for asset_id, document in rows:
            seen = dict.fromkeys(document.split())
            for label in sorted(labels[asset_id]):
                for word in _words(label):
                    seen.setdefault(word, None)
            updated.append({"asset": asset_id, "document": " ".join(seen)})
        if updated:
            bind.execute(
                sa.text("UPDATE asset_search SET document = :document WHERE asset_id = :asset"),
                updated,
            )


def upgrade() -> None:
    _add_label_words(op.get_bind())


def downgrade() -> None:
    # The label words stay: an older revision searches them too, harmlessly.
    pass
