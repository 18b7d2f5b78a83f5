"""Which files a ``verify`` checks: every present one, or with ``sample`` (a
percentage) a rolling window — that share of them, the least recently verified
first — so that a weekly verify of 25 % re-hashes the whole library every four
weeks, each run a bounded one.

A file is stamped (``files.verified_at``) when its bytes matched; a changed, missing
or unreadable one keeps its old stamp, stays first in line, and the next run reports
it again. A verify that runs again after a crash checks the files it chose the first
time (its items), not a new window.
"""

from __future__ import annotations

import math
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.orm import Session

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import UTCDateTime, files, job_items
from photo_pipeline.jobs import InvalidArgument, utc_now
from photo_pipeline.jobs.context import JobContext, ResultCallback, RowWriter
from photo_pipeline.pipeline.library.catalog import PRESENT


def check_sample(value: Any) -> float | None:
    """A share of the library, in percent (0 < p ≤ 100; ``"25%"`` reads as 25), or
    None for all; ``InvalidArgument`` (``invalid_sample``) otherwise."""
    if value is None:
        return None
    try:
        text = str(value).strip().removesuffix("%")
        percent = float(text) if isinstance(value, str) else float(value)
    except (TypeError, ValueError):
        percent = math.nan
    if isinstance(value, bool) or not 0 < percent <= 100:
        raise InvalidArgument(
            "invalid_sample", f"sample is a percentage above 0 and at most 100, got {value!r}"
        )
    return int(percent) if percent.is_integer() else percent


def choose(ctx: JobContext, expected: dict[str, str]) -> dict[str, str]:
    """The part of ``expected`` (item key -> catalogued hash) this job checks."""
    sample = check_sample(ctx.params.get("sample"))
    if sample is None:
        return expected
    with read_session(ctx.session_factory) as session:
        chosen = list(
            session.scalars(select(job_items.c.item_key).where(job_items.c.job_id == ctx.job_id))
        )
        if not chosen:  # the first run: the least recently verified share
            share = math.ceil(len(expected) * sample / 100)
            rows = session.execute(
                select(files.c.source_id, files.c.path)
                .where(files.c.state == PRESENT, files.c.asset_id.is_not(None))
                .order_by(files.c.verified_at.asc().nulls_first(), files.c.id)
                .limit(share)
            )
            chosen = [f"{source_id}:{path}" for source_id, path in rows]
    return {key: expected[key] for key in chosen if key in expected}


def stamping(ctx: JobContext, compare: ResultCallback) -> ResultCallback:
    """``compare`` that also stamps each file it found unchanged, in the transaction
    that reports its item done."""
    matched: list[dict[str, Any]] = []

    def writer() -> RowWriter | None:
        if not matched:
            return None
        batch = [{**row, "stamp": utc_now()} for row in matched]
        matched.clear()

        def write(session: Session) -> None:
            session.execute(
                update(files)
                .where(files.c.source_id == bindparam("sid"), files.c.path == bindparam("rel"))
                .values(verified_at=bindparam("stamp", type_=UTCDateTime())),
                batch,
            )

        return write

    ctx.before_flush(writer)

    def on_result(key: str, found: Any) -> None:
        compare(key, found)  # an ItemError: not stamped
        source_id, path = key.split(":", 1)
        matched.append({"sid": int(source_id), "rel": path})

    return on_result
