"""The timeline's buckets: how many assets the library shows on each capture day (local
calendar), newest or oldest first, for the web UI's day headings, its placeholder
heights and its date scrubber (months and years are added up from the days).

Without filters the days are read from ``timeline_days``, the summary that triggers on
assets keep (migration 0029): a row per day, so the answer costs the same at a million
assets as at ten thousand. With filters (or search words) the days are counted from the
matching assets, grouped on ``ix_assets_taken_local_id``: that costs what the matches
are (measured in bench.scale). The summary counts every catalogued asset (a Live
Photo's motion half left out); the listing also leaves out one whose files are all
gone, which the filtered count does too.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import delete, func, insert, select
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.schema import assets, timeline_days
from photo_pipeline.pipeline.library.browse import AssetFilter, listed
from photo_pipeline.pipeline.library.catalog import listing_session


@dataclass(frozen=True)
class Timeline:
    days: list[tuple[str, int]]  # (YYYY-MM-DD, assets), in the order asked for
    from_summary: bool  # read from timeline_days (no filter), else counted

    @property
    def total(self) -> int:
        return sum(count for _, count in self.days)


def timeline(
    session_factory: sessionmaker[Session], where: AssetFilter, *, newest_first: bool = True
) -> Timeline:
    """The capture days of the assets ``where`` lists, each with its count."""
    with listing_session(session_factory) as session:
        if where == AssetFilter():
            day, count = timeline_days.c.day, timeline_days.c.count
            query = select(day, count).where(count > 0)
            query = query.order_by(day.desc() if newest_first else day)
            return Timeline([(d, n) for d, n in session.execute(query)], from_summary=True)
        local_day = func.substr(assets.c.taken_local, 1, 10)
        counted = listed(select(local_day, func.count()).select_from(assets), where, session)
        counted = counted.group_by(local_day).order_by(
            local_day.desc() if newest_first else local_day
        )
        return Timeline([(d, n) for d, n in session.execute(counted)], from_summary=False)


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
