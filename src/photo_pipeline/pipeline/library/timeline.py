"""The timeline's buckets: how many assets the library shows on each capture day (local
calendar), newest or oldest first, for the web UI's day headings, its placeholder
heights and its date scrubber (months and years are added up from the days).

Read from summaries that triggers on assets keep, a row per day (and per camera or
place), so the answer costs about the same at a million assets as at ten thousand:
without filters, or with only a range of days, from ``timeline_days`` (migration 0029);
filtered by a camera or by a place (and days), from ``timeline_cameras`` or
``timeline_places`` (0032), the rows of every camera or place that matches added up.
Other filters (and search words, and camera with place) are counted from the matching
assets, grouped on ``ix_assets_taken_local_id``: that costs what the matches are
(measured in bench.scale). The summaries count every catalogued asset (a Live Photo's
motion half left out); the listing also leaves out one whose files are all gone, which
the counted timeline does too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from sqlalchemy import Select, delete, false, func, insert, or_, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.schema import assets, timeline_cameras, timeline_days, timeline_places
from photo_pipeline.pipeline.library.browse import AssetFilter, listed
from photo_pipeline.pipeline.library.catalog import listing_session
from photo_pipeline.pipeline.library.text_filters import (
    camera_arms,
    matching_values,
    place_arms,
)


@dataclass(frozen=True)
class Timeline:
    days: list[tuple[str, int]]  # (YYYY-MM-DD, assets), in the order asked for
    from_summary: bool  # read from a summary (no filter, days, a camera or a place)

    @property
    def total(self) -> int:
        return sum(count for _, count in self.days)


def timeline(
    session_factory: sessionmaker[Session], where: AssetFilter, *, newest_first: bool = True
) -> Timeline:
    """The capture days of the assets ``where`` lists, each with its count."""
    with listing_session(session_factory) as session:
        summed = _summed(session, where)
        if summed is not None:
            day = summed.selected_columns.day
            summed = summed.order_by(day.desc() if newest_first else day)
            return Timeline([(d, n) for d, n in session.execute(summed)], from_summary=True)
        local_day = func.substr(assets.c.taken_local, 1, 10)
        counted = listed(select(local_day, func.count()).select_from(assets), where, session)
        counted = counted.group_by(local_day).order_by(
            local_day.desc() if newest_first else local_day
        )
        return Timeline([(d, n) for d, n in session.execute(counted)], from_summary=False)


def _summed(session: Session, where: AssetFilter) -> Select[str, int] | None:
    """The days and counts of ``where`` from a summary, unordered; None when no
    summary answers it."""
    rest = replace(where, taken_from=None, taken_to=None, camera=None, place=None)
    if rest != AssetFilter() or (where.camera and where.place):
        return None
    if where.camera or where.place:
        # The matching cameras' (or places') rows: ranges of the summary's indexes.
        table, arms = (
            (timeline_cameras, camera_arms(where.camera))
            if where.camera
            else (timeline_places, place_arms(where.place or ""))
        )
        found = {arm.column: matching_values(session, table, arm) for arm in arms}
        matches = or_(false(), *(table.c[c].in_(values) for c, values in found.items() if values))
    else:
        table, matches = timeline_days, timeline_days.c.count > 0
    day = table.c.day
    query = select(day, func.sum(table.c.count).label("count")).where(matches)
    if where.taken_from is not None:
        query = query.where(day >= where.taken_from.isoformat())
    if where.taken_to is not None:
        query = query.where(day <= where.taken_to.isoformat())
    return query.group_by(day)


def rebuild_timeline_days(session: Session) -> None:
    """``timeline_days`` counted afresh from the assets, in the caller's transaction
    (after a bulk load made with the triggers off)."""
    day = func.substr(assets.c.taken_local, 1, 10)
    session.execute(delete(timeline_days))
    session.execute(
        insert(timeline_days).from_select(
            ["day", "count"],
            select(day, func.count()).where(assets.c.live_of.is_(None)).group_by(day),
        )
    )


# Each camera or place summary: the assets' columns it counts by (migration 0032).
_FACETS = {
    timeline_cameras: ("make", "model"),
    timeline_places: ("country_code", "country", "region", "city", "district"),
}


def rebuild_timeline_facets(session: Session) -> None:
    """``timeline_cameras`` and ``timeline_places`` counted afresh from the assets, in
    the caller's transaction (after a bulk load made with the triggers off)."""
    for table, keys in _FACETS.items():
        key = [func.coalesce(assets.c[k], "") for k in keys]
        day = func.substr(assets.c.taken_local, 1, 10)
        known = [assets.c[k].is_not(None) for k in keys]
        session.execute(delete(table))
        session.execute(
            insert(table).from_select(
                [*keys, "day", "count"],
                select(*key, day, func.count())
                .where(assets.c.live_of.is_(None), or_(*known))
                .group_by(*key, day),
            )
        )
