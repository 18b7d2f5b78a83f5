"""The orders an asset listing can be sorted in, each a walk of one index with a keyset
cursor (so a deep page costs what the first does):

- ``taken``: by the local wall clock the camera showed (``taken_local``, then id), the
  time the listings show; index ``ix_assets_taken_local_id``;
- ``taken-desc``: the same, newest first (the timeline's order): that index walked
  backwards;
- ``taken-utc``: by the instant (``taken_order``: UTC when known, floating times read
  as UTC, then id); index ``ix_assets_taken_order_id``. Photos taken in several zones
  interleave by when they happened, so their local times can look out of order;
- ``added``: newest first, by when the asset was catalogued (its id: ids are handed
  out in order); the primary key.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, tuple_

from photo_pipeline.db.schema import assets
from photo_pipeline.errors import PhotoPipelineError

SORTS = ("taken", "taken-desc", "taken-utc", "added")
_MAX_ID = 2**63 - 1


class BadCursor(PhotoPipelineError):
    code = "invalid_cursor"
    status = 422


class UnknownSort(PhotoPipelineError):
    code = "invalid_sort"
    status = 422


@dataclass(frozen=True)
class Order:
    """One listing order: its ORDER BY, the keyset after a row, its cursors."""

    name: str

    def __post_init__(self) -> None:
        if self.name not in SORTS:
            raise UnknownSort(detail=f"sort must be one of {', '.join(SORTS)}, got {self.name!r}")

    @property
    def columns(self) -> list[Any]:
        """The ORDER BY clauses."""
        if self.name == "taken":
            return [assets.c.taken_local, assets.c.id]
        if self.name == "taken-desc":
            return [assets.c.taken_local.desc(), assets.c.id.desc()]
        if self.name == "taken-utc":
            return [assets.c.taken_order, assets.c.id]
        return [assets.c.id.desc()]

    def key(self, row: dict[str, Any]) -> tuple[Any, ...]:
        """The keyset of ``row`` (which holds the columns the order reads)."""
        if self.name in ("taken", "taken-desc"):
            return (row["taken_local"], row["id"])
        if self.name == "taken-utc":
            return (row["taken_order"], row["id"])
        return (row["id"],)

    def after(self, key: tuple[Any, ...]) -> ColumnElement[bool]:
        """The rows that come after ``key`` in this order."""
        later: ColumnElement[bool]
        if self.name == "taken":
            later = tuple_(assets.c.taken_local, assets.c.id) > key
        elif self.name == "taken-desc":
            later = tuple_(assets.c.taken_local, assets.c.id) < key
        elif self.name == "taken-utc":
            later = tuple_(assets.c.taken_order, assets.c.id) > key
        else:
            later = assets.c.id < key[0]
        return later

    def encode(self, row: dict[str, Any]) -> str:
        """The cursor of the page after ``row``. A ``taken-utc`` cursor is written as
        before there were other orders, so that one given out then still pages."""
        key = self.key(row)
        if self.name == "taken-utc":
            raw: list[Any] = [key[0].isoformat() if key[0] else None, key[1]]
        else:
            raw = [self.name, *key]
        return base64.urlsafe_b64encode(json.dumps(raw).encode()).decode().rstrip("=")

    def decode(self, cursor: str) -> tuple[Any, ...]:
        """The keyset a cursor of this order holds; ``BadCursor`` for anything else
        (a cursor of another order included)."""
        try:
            raw = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
            if not isinstance(raw, list):
                raise ValueError
            if self.name == "taken-utc":
                order, asset_id = raw
                when = datetime.fromisoformat(order)
                if when.tzinfo is None:
                    raise ValueError
                return when, _asset_id(asset_id)
            if raw[0] != self.name:
                raise ValueError
            if self.name in ("taken", "taken-desc"):
                _, local, asset_id = raw
                if not isinstance(local, str) or len(local) > 32:
                    raise ValueError
                return local, _asset_id(asset_id)
            _, asset_id = raw
            return (_asset_id(asset_id),)
        except (ValueError, TypeError, UnicodeDecodeError):
            raise BadCursor(
                "invalid_cursor", f"cursor is not one this server gave out for sort {self.name}"
            ) from None


def _asset_id(value: Any) -> int:
    if type(value) is not int or not 0 <= value <= _MAX_ID:
        raise ValueError
    return value
