"""The dry run of a timeshift: which assets of one camera model, in which window of
capture times, it would change and how (plain dicts for the CLI and the API)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, select, true
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.pipeline.timeshift.arithmetic import (
    InvalidShift,
    format_shift,
    parse_shift,
    shifted,
)

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class NothingToShift(PhotoPipelineError):
    code = "no_matching_assets"
    status = 422


@dataclass(frozen=True)
class Window:
    """Capture times (local wall clock) from ``since`` inclusive to ``before``
    exclusive, as ISO text comparable with ``assets.taken_local``."""

    since: str | None
    before: str | None

    @classmethod
    def parse(cls, since: str | None, until: str | None) -> Window:
        """``--since``/``--until`` as ``YYYY-MM-DD`` (a whole day, both inclusive) or an
        ISO date and time (to the second)."""
        start = _parse_moment("--since", since)
        end = _parse_moment("--until", until)
        if end is not None and until is not None:
            try:
                end += timedelta(days=1) if _DATE.match(until.strip()) else timedelta(seconds=1)
            except OverflowError:
                end = None  # until the last representable moment: no upper bound
        if start is not None and end is not None and end <= start:
            raise InvalidShift(detail=f"--until ({until}) is before --since ({since})")
        return cls(
            start.isoformat() if start else None, end.isoformat() if end is not None else None
        )

    def condition(self) -> Any:
        clauses = []
        if self.since is not None:
            clauses.append(assets.c.taken_local >= self.since)
        if self.before is not None:
            clauses.append(assets.c.taken_local < self.before)
        return and_(true(), *clauses)


def _parse_moment(option: str, text: str | None) -> datetime | None:
    if text is None or not text.strip():
        return None
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise InvalidShift(
            detail=f"{option} must be a date (YYYY-MM-DD) or date and time, got {text!r}"
        ) from None
    return moment.replace(tzinfo=None)


def camera_condition(camera: str) -> Any:
    # Exact (case-insensitive) model: a substring would shift an "EOS R50" with an "EOS R5".
    return func.lower(assets.c.model) == camera.strip().lower()


PLAN_COLUMNS = (
    assets.c.id,
    assets.c.make,
    assets.c.model,
    assets.c.taken_local,
    assets.c.taken_offset_minutes,
    assets.c.taken_utc,
    assets.c.taken_order,
    assets.c.tz_name,
    assets.c.tz_source,
)


def plan_timeshift(
    session_factory: sessionmaker[Session],
    *,
    camera: str,
    by: str | timedelta,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """The dry run: which assets a timeshift would change and how, as plain dicts.

    Returns ``{"camera", "by", "by_seconds", "since", "until", "count", "assets": [{
    "asset_id", "make", "model", "tz_source", "taken_local_before", "taken_local_after",
    "taken_utc_before", "taken_utc_after", "error"}]}`` (``error`` is
    ``shift_out_of_range`` for an asset the shift would push past year 9999, else None).
    Raises ``InvalidShift`` for bad input.
    """
    request = shift_request(camera=camera, by=by, since=since, until=until)
    shift, window = timedelta(seconds=request["by_seconds"]), Window.parse(since, until)
    with read_session(session_factory) as session:
        rows = session.execute(
            select(*PLAN_COLUMNS)
            .where(camera_condition(camera), window.condition())
            .order_by(assets.c.taken_local, assets.c.id)
        ).all()
    planned = []
    for row in rows:
        entry: dict[str, Any] = {
            "asset_id": row.id,
            "make": row.make,
            "model": row.model,
            "tz_source": row.tz_source,
            "taken_local_before": row.taken_local,
            "taken_utc_before": row.taken_utc,
            "taken_local_after": None,
            "taken_utc_after": None,
            "error": None,
        }
        try:
            after = shifted(row._mapping, shift)
        except OverflowError:
            entry["error"] = "shift_out_of_range"
        else:
            entry["taken_local_after"] = after.taken_local
            entry["taken_utc_after"] = after.taken_utc
        planned.append(entry)
    return {**request, "count": len(planned), "assets": planned}


def shift_request(
    *, camera: str, by: str | timedelta, since: str | None, until: str | None
) -> dict[str, Any]:
    """A timeshift request checked and in its canonical form, as its job keeps it
    (``camera``, ``by``, ``by_seconds``, ``since``, ``until``); raises ``InvalidShift``."""
    shift = parse_shift(by) if isinstance(by, str) else by
    window = Window.parse(since, until)
    if not camera.strip():
        raise InvalidShift(detail="--camera must name a camera model, got an empty string")
    return {
        "camera": camera,
        "by": format_shift(shift),
        "by_seconds": int(shift.total_seconds()),
        "since": window.since,
        "until": until,
    }
