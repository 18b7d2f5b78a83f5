"""The dry run of a timeshift: which assets (of one camera model, or chosen by id) in
which window of capture times it would change and how (plain dicts for the CLI and the
API). A shift moves each clock by the same amount (``by``); a set gives each the same
local date and time (``set``), and makes it the user's (source ``user``)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, func, or_, select, true
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.pipeline.timeshift.arithmetic import (
    CaptureValues,
    InvalidShift,
    format_shift,
    parse_set,
    parse_shift,
    set_clock,
    shifted,
)

_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


# The source of a date the user set: media.capture_time.SOURCES ranks it first.
USER_SOURCE = "user"
# Assets one request may name (the web UI's selection; a camera has no such bound).
MAX_ASSET_IDS = 10_000
_ID_CHUNK = 500


class NothingToShift(PhotoPipelineError):
    code = "no_matching_assets"
    status = 422


class UnknownAssets(PhotoPipelineError):
    code = "asset_not_found"
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


def _chunks(ids: list[int]) -> list[list[int]]:
    return [ids[at : at + _ID_CHUNK] for at in range(0, len(ids), _ID_CHUNK)]


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
    assets.c.taken_source,
)


def plan_timeshift(
    session_factory: sessionmaker[Session],
    *,
    camera: str | None = None,
    asset_ids: list[int] | None = None,
    by: str | timedelta | None = None,
    set_to: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """The dry run: which assets a timeshift would change and how, as plain dicts.

    Returns the request (:func:`shift_request`) with ``"count"`` and ``"assets": [{
    "asset_id", "make", "model", "tz_source", "taken_source", "taken_local_before",
    "taken_local_after", "taken_utc_before", "taken_utc_after", "error"}]}`` (``error``
    is ``shift_out_of_range`` for an asset the shift would push past year 9999, else
    None). Named assets include their Live Photo motion parts (they travel as one).
    Raises ``InvalidShift`` for bad input, ``UnknownAssets`` for an id not catalogued.
    """
    request = shift_request(
        camera=camera, asset_ids=asset_ids, by=by, set_to=set_to, since=since, until=until
    )
    window = Window.parse(since, until)
    with read_session(session_factory) as session:
        rows = _selected(session, request, window)
    planned = []
    for row in rows:
        entry: dict[str, Any] = {
            "asset_id": row.id,
            "make": row.make,
            "model": row.model,
            "tz_source": row.tz_source,
            "taken_source": row.taken_source,
            "taken_local_before": row.taken_local,
            "taken_utc_before": row.taken_utc,
            "taken_local_after": None,
            "taken_utc_after": None,
            "error": None,
        }
        try:
            after = changed(row._mapping, request)
        except OverflowError:
            entry["error"] = "shift_out_of_range"
        else:
            entry["taken_local_after"] = after.taken_local
            entry["taken_utc_after"] = after.taken_utc
        planned.append(entry)
    return {**request, "count": len(planned), "assets": planned}


def _selected(session: Session, request: dict[str, Any], window: Window) -> list[Any]:
    order = (assets.c.taken_local, assets.c.id)
    if request["asset_ids"] is None:
        return list(
            session.execute(
                select(*PLAN_COLUMNS)
                .where(camera_condition(request["camera"]), window.condition())
                .order_by(*order)
            ).all()
        )
    ids = request["asset_ids"]
    found: dict[int, Any] = {}
    for chunk in _chunks(ids):
        # A Live Photo's motion part (live_of) is dated with its still.
        for row in session.execute(
            select(*PLAN_COLUMNS).where(or_(assets.c.id.in_(chunk), assets.c.live_of.in_(chunk)))
        ):
            found[row.id] = row
    missing = sorted(set(ids) - set(found))
    if missing:
        shown = ", ".join(str(i) for i in missing[:10]) + (" …" if len(missing) > 10 else "")
        raise UnknownAssets(detail=f"no asset {shown} in the catalogue")
    rows = [row for row in found.values() if _in_window(row.taken_local, window)]
    return sorted(rows, key=lambda row: (row.taken_local, row.id))


def _in_window(taken_local: str, window: Window) -> bool:
    return (window.since is None or taken_local >= window.since) and (
        window.before is None or taken_local < window.before
    )


def changed(values: Any, request: dict[str, Any]) -> CaptureValues:
    """What ``values`` (an asset row's mapping) become by this request: shifted by
    ``by_seconds``, or set to ``set``. Raises OverflowError past year 9999."""
    if request.get("set") is not None:
        return set_clock(values, datetime.fromisoformat(request["set"]))
    return shifted(values, timedelta(seconds=request["by_seconds"]))


def shift_request(
    *,
    camera: str | None = None,
    asset_ids: list[int] | None = None,
    by: str | timedelta | None = None,
    set_to: str | None = None,
    since: str | None = None,
    until: str | None = None,
) -> dict[str, Any]:
    """A timeshift request checked and in its canonical form, as its job keeps it
    (``camera``, ``asset_ids``, ``by``, ``by_seconds``, ``set``, ``since``, ``until``):
    which assets (a camera model, or ids) and what change (a shift ``by``, or a date
    to ``set``), exactly one of each. Raises ``InvalidShift``."""
    window = Window.parse(since, until)
    if (camera is None) == (asset_ids is None):
        raise InvalidShift(detail="name either a camera model (--camera) or assets (--asset)")
    if camera is not None and not camera.strip():
        raise InvalidShift(detail="--camera must name a camera model, got an empty string")
    if asset_ids is not None:
        if not asset_ids:
            raise InvalidShift(detail="--asset must name at least one asset")
        if len(asset_ids) > MAX_ASSET_IDS:
            raise InvalidShift(detail=f"at most {MAX_ASSET_IDS} assets at a time")
        if any(type(i) is not int or i < 1 for i in asset_ids):
            raise InvalidShift(detail="asset ids are positive whole numbers")
        asset_ids = sorted(set(asset_ids))
    if (by is None) == (set_to is None):
        raise InvalidShift(detail="give either --by (a shift) or --set (a date and time)")
    request: dict[str, Any] = {
        "camera": camera,
        "asset_ids": asset_ids,
        "by": None,
        "by_seconds": None,
        "set": None,
        "since": window.since,
        "until": until,
    }
    if set_to is not None:
        request["set"] = parse_set(set_to).isoformat()
    else:
        assert by is not None
        shift = parse_shift(by) if isinstance(by, str) else by
        request["by"] = format_shift(shift)
        request["by_seconds"] = int(shift.total_seconds())
    return request
