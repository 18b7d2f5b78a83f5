"""Access paths for the filters few assets match, so that a filtered page of assets
costs about a page of rows whatever the library's size.

The plain listing walks the order's index and tests each row, so a page costs as many
rows as precede its last match: a camera bought last year, or Live Photos, mean walking
most of a million rows. Here the filter is first turned into *branches*, each an
ordered walk of an index led by what it fixes and then by the order's key:

- ``camera`` (part of make or model, any case): the few distinct makes and models that
  match, found by a loose scan of ``ix_assets_{make,model}_taken_*`` (one probe per
  distinct value), a branch for each value;
- ``place`` (part of city, district, region or country, or its country code): the
  same, over ``ix_assets_{country,region,city,district,country_code}_taken_*``;
- ``type=live``: Motion Photos by their partial index, and the stills of the motion
  parts (``live_of``) joined in the order (as many rows as there are Live Photos).

Each branch gives its first ``want`` keys after the cursor; merged, the first ``want``
of them bound a range of the order in which every row a branch holds is among them.
The page is then the plain filtered query (every condition kept) restricted to those
ids: the same rows in the same order as the plain walk. When conditions reject some of
them the walk goes on from the bound, a few times, then falls back to the plain walk.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, select, union_all
from sqlalchemy.orm import Session

from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline.library.ordering import Order
from photo_pipeline.pipeline.library.text_filters import (
    Arm,
    camera_arms,
    matching_values,
    place_arms,
)

# The orders with a branch index (the listing's default and the web UI's).
_PATH_SORTS = ("taken-utc", "taken", "taken-desc")
# Walks from a bound before giving the rest of the page to the plain walk.
_ROUNDS = 4
# More matching values than this: the plain walk (each branch reads a page).
_MAX_BRANCHES = 24


def branches(
    session: Session,
    order: Order,
    *,
    camera: str | None,
    place: str | None,
    asset_type: str | None,
) -> list[Select[Any]] | None:
    """The branches of the rarest filter that has them (unordered, unlimited: ``walk``
    adds the cursor, order and limit), or None: no path, the plain walk."""
    if order.name not in _PATH_SORTS:
        return None
    if camera:
        found = _by_value(session, order, camera_arms(camera))
        if found is not None:
            return found
    if place:
        found = _by_value(session, order, place_arms(place))
        if found is not None:
            return found
    if asset_type == "live":
        motion = assets.alias("motion")
        stills = _keyed(order).join(motion, motion.c.live_of == assets.c.id)
        return [_keyed(order).where(assets.c.is_motion_photo.is_(True)), stills]
    return None


def _by_value(session: Session, order: Order, arms: list[Arm]) -> list[Select[Any]] | None:
    """A branch per stored value of each column that its arm accepts
    (``text_filters``): the filter's ``OR`` of those conditions, each value a range of
    the column's index. None when too many values match (a common word matches so
    many assets that the plain walk finds a page soon)."""
    found: list[Select[Any]] = []
    for arm in arms:
        column = assets.c[arm.column]
        found += [
            _keyed(order).where(column == value) for value in matching_values(session, assets, arm)
        ]
        if len(found) > _MAX_BRANCHES:
            return None
    return found


def walk(
    session: Session,
    query: Select[Any],
    order: Order,
    key: tuple[Any, ...] | None,
    want: int,
    paths: list[Select[Any]],
) -> list[Any]:
    """The first ``want`` rows of ``query`` (the plain filtered listing, ordered, with
    no cursor) after ``key``, read through ``paths``."""
    rows: list[Any] = []
    for _ in range(_ROUNDS):
        ids, bound = _candidates(session, paths, order, key, want)
        if ids:
            # By their ids: SQLite would rather walk the order's index, testing each
            # row against the list (most of the index for a camera of last year).
            page = (
                query.where(assets.c.id.in_(ids))
                .with_hint(assets, "NOT INDEXED", dialect_name="sqlite")
                .limit(want - len(rows))
            )
            if key is not None:
                page = page.where(order.after(key))
            rows += session.execute(page).all()
        if bound is None or len(rows) >= want:
            return rows
        if any(part is None for part in bound):
            break  # a NULL key: the keyset cannot start after it
        key = bound
    rest = query.limit(want - len(rows))
    if key is not None:
        rest = rest.where(order.after(key))
    return rows + list(session.execute(rest).all())


def _keyed(order: Order) -> Select[Any]:
    """A branch's columns: the order's key, named k0, k1 (the last is the id)."""
    return select(*(_plain(c).label(f"k{n}") for n, c in enumerate(order.columns)))


def _plain(clause: Any) -> Any:
    """An ORDER BY clause's column (``desc()`` taken off)."""
    return getattr(clause, "element", clause)


def _candidates(
    session: Session,
    paths: list[Select[Any]],
    order: Order,
    key: tuple[Any, ...] | None,
    want: int,
) -> tuple[list[int], tuple[Any, ...] | None]:
    """The ids of the first ``want`` rows of all branches merged after ``key``, and the
    key of the last (None when the branches hold fewer: no row is left after them)."""
    parts = []
    for path in paths:
        branch = path.order_by(*order.columns).limit(want)
        if key is not None:
            branch = branch.where(order.after(key))
        parts.append(select(*branch.subquery().c))
    if not parts:
        return [], None
    merged = union_all(*parts).subquery()
    descending = order.name == "taken-desc"
    keys = [merged.c[f"k{n}"] for n in range(len(order.columns))]
    ordered = [k.desc() if descending else k for k in keys]
    found = session.execute(select(*keys).order_by(*ordered).limit(want)).all()
    ids = [row[-1] for row in found]
    bound = tuple(found[-1]) if len(found) == want else None
    return ids, bound
