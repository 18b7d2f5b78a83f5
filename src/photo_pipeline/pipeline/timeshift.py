"""Camera clock correction: shift the catalogued capture times of one camera model
(never the originals) as a durable job, journalled so that its undo restores them.

Front doors (CLI and API) use: ``parse_shift``, ``plan_timeshift`` (the dry run, plain
dicts), ``start_timeshift``, ``start_undo`` and ``journal``. Both job types hold the
library-wide ``"library"`` lock, which organize holds too: a shift never runs while
files are being organized by their dates.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import RowMapping, and_, func, select, true, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import changed_rows, read_session, write_session
from photo_pipeline.db.errors import transactional
from photo_pipeline.db.schema import assets, timeshift_entries
from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.jobs import (
    ACTIVE_STATES,
    JobBlocked,
    JobNotFound,
    JobService,
    JobSnapshot,
    JobState,
    utc_now,
)
from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.media.places import (
    EXIF_OFFSET,
    GPS_TIMEZONE,
    fixed_offset_name,
    offset_at,
    sort_instant,
)

JOB_TYPE = "timeshift"
UNDO_JOB_TYPE = "timeshift_undo"
LIBRARY_LOCK = "library"  # shared with organize: one library-wide mutation at a time

# Twenty-odd years covers a camera whose clock reset to its factory date.
_MAX_SHIFT = timedelta(days=36_525)
_BATCH = 200
# ASCII digits, at most 12 each (anything longer is past _MAX_SHIFT anyway).
_SHIFT = re.compile(
    r"^([+-]?)(?:([0-9]{1,12})d)?(?:([0-9]{1,12})h)?(?:([0-9]{1,12})m)?(?:([0-9]{1,12})s)?$"
)
_DATE = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}$")


class InvalidShift(PhotoPipelineError):
    """A bad ``--by``, ``--since`` or ``--until`` value."""

    code = "invalid_shift"
    status = 422


class NothingToShift(PhotoPipelineError):
    code = "no_matching_assets"
    status = 422


class NotATimeshift(PhotoPipelineError):
    """Undo was asked of a job that is not a timeshift, or left nothing to undo."""

    code = "not_a_timeshift"
    status = 422


# ── input ─────────────────────────────────────────────────────────────────────
def parse_shift(text: str) -> timedelta:
    """``+2h15m``, ``-1d``, ``-30s``, ``+1d2h3m4s`` -> a non-zero timedelta."""
    match = _SHIFT.match(text.strip().replace(" ", "").lower())
    if match is None or not any(match.group(i) for i in range(2, 6)):
        raise InvalidShift(
            detail=f"--by must look like +2h15m, -1d or +30s (units d, h, m, s), got {text!r}"
        )
    days, hours, minutes, seconds = (int(match.group(i) or 0) for i in range(2, 6))
    try:
        shift = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise InvalidShift(
            detail=f"--by must be at most {_MAX_SHIFT.days} days, got {text!r}"
        ) from None
    if match.group(1) == "-":
        shift = -shift
    if not shift:
        raise InvalidShift(detail=f"--by must not be zero, got {text!r}")
    if abs(shift) > _MAX_SHIFT:
        raise InvalidShift(detail=f"--by must be at most {_MAX_SHIFT.days} days, got {text!r}")
    return shift


def format_shift(shift: timedelta) -> str:
    """The inverse of ``parse_shift``: 8100 s -> ``+2h15m``."""
    total = int(shift.total_seconds())
    sign, total = ("-" if total < 0 else "+"), abs(total)
    parts = []
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60), ("s", 1)):
        if total >= size:
            parts.append(f"{total // size}{unit}")
            total %= size
    return sign + "".join(parts)


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


def _camera_condition(camera: str) -> Any:
    # Exact (case-insensitive) model: a substring would shift an "EOS R50" with an "EOS R5".
    return func.lower(assets.c.model) == camera.strip().lower()


# ── the shift ─────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class CaptureValues:
    """The capture-time columns a shift changes."""

    taken_local: str
    taken_offset_minutes: int | None
    taken_utc: datetime | None
    taken_order: datetime | None
    tz_name: str | None


def shifted(values: RowMapping | Mapping[str, Any], shift: timedelta) -> CaptureValues:
    """The capture columns ``values`` (an asset row's mapping) after moving its wall
    clock by ``shift``. A zone from GPS gives the offset valid at the new time (the
    shift may cross a DST change); an EXIF offset stays as the camera wrote it (and
    keeps naming its zone only while the zone agrees). Raises OverflowError past year
    9999."""
    local = datetime.fromisoformat(values["taken_local"]) + shift
    offset, zone = values["taken_offset_minutes"], values["tz_name"]
    if values["tz_source"] == GPS_TIMEZONE and zone:
        offset = offset_at(zone, local)
    elif (
        values["tz_source"] == EXIF_OFFSET
        and zone
        and offset is not None
        and zone != fixed_offset_name(offset)
        and offset_at(zone, local) != offset
    ):
        zone = fixed_offset_name(offset)
    utc = None
    if offset is not None:
        utc = (local - timedelta(minutes=offset)).replace(tzinfo=UTC)
    return CaptureValues(local.isoformat(), offset, utc, sort_instant(local, utc), zone)


_PLAN_COLUMNS = (
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
    shift = parse_shift(by) if isinstance(by, str) else by
    window = Window.parse(since, until)
    if not camera.strip():
        raise InvalidShift(detail="--camera must name a camera model, got an empty string")
    with read_session(session_factory) as session:
        rows = session.execute(
            select(*_PLAN_COLUMNS)
            .where(_camera_condition(camera), window.condition())
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
    return {
        "camera": camera,
        "by": format_shift(shift),
        "by_seconds": int(shift.total_seconds()),
        "since": window.since,
        "until": until,
        "count": len(planned),
        "assets": planned,
    }


def start_timeshift(
    service: JobService,
    *,
    camera: str,
    by: str | timedelta,
    since: str | None = None,
    until: str | None = None,
    idempotency_key: str | None = None,
) -> JobSnapshot:
    """Queue a ``timeshift`` job over the assets ``plan_timeshift`` lists (its items
    are their ids, fixed now). Raises ``InvalidShift``, ``NothingToShift``, or
    ``JobBlocked`` (``lock_held``) while organize or another timeshift is active."""
    plan = plan_timeshift(service.session_factory, camera=camera, by=by, since=since, until=until)
    if not plan["count"]:
        raise NothingToShift(detail=f"no asset of camera model {camera!r} in that time window")
    return service.enqueue(
        JOB_TYPE,
        lock=LIBRARY_LOCK,
        items=[str(entry["asset_id"]) for entry in plan["assets"]],
        params={k: plan[k] for k in ("camera", "by", "by_seconds", "since", "until")},
        idempotency_key=idempotency_key,
    )


def start_undo(
    service: JobService, job_id: str, *, idempotency_key: str | None = None
) -> JobSnapshot:
    """Queue a ``timeshift_undo`` job restoring what timeshift ``job_id`` changed (and
    is not undone yet). Raises ``JobNotFound``, ``NotATimeshift``, or ``JobBlocked``
    while that job (or organize) still runs."""
    job = service.get(job_id)
    if job is not None and job["job_type"] != JOB_TYPE:
        raise NotATimeshift(detail=f"job {job_id} is a {job['job_type']} job, not a timeshift")
    if job is not None and JobState(job["state"]) in ACTIVE_STATES:
        raise JobBlocked("lock_held", f"timeshift {job_id} is {job['state']}: undo it once it ends")
    with read_session(service.session_factory) as session:
        pending = list(
            session.scalars(
                select(timeshift_entries.c.asset_id)
                .where(
                    timeshift_entries.c.job_id == job_id, timeshift_entries.c.undone_at.is_(None)
                )
                .order_by(timeshift_entries.c.asset_id)
            )
        )
    if job is None and not pending:
        raise JobNotFound(detail=f"no timeshift job {job_id}")
    if not pending:
        raise NotATimeshift(
            "nothing_to_undo", f"timeshift {job_id} changed nothing that is not undone already"
        )
    return service.enqueue(
        UNDO_JOB_TYPE,
        lock=LIBRARY_LOCK,
        items=[str(asset_id) for asset_id in pending],
        params={"job_id": job_id},
        idempotency_key=idempotency_key,
    )


def journal(session_factory: sessionmaker[Session], job_id: str) -> list[dict[str, Any]]:
    """What timeshift ``job_id`` changed: one dict per asset, old and new values."""
    with read_session(session_factory) as session:
        rows = session.execute(
            select(timeshift_entries)
            .where(timeshift_entries.c.job_id == job_id)
            .order_by(timeshift_entries.c.asset_id)
        ).all()
    return [dict(row._mapping) for row in rows]


# ── handlers ──────────────────────────────────────────────────────────────────
def _in_batches(ctx: JobContext, apply: Any) -> None:
    """Apply each batch of items in one transaction, then report them."""
    batch: list[str] = []

    def run() -> None:
        failures = apply([int(key) for key in batch])
        for key in batch:
            failure = failures.get(int(key))
            if failure is None:
                ctx.succeed(key)
            else:
                ctx.fail(key, *failure)
        batch.clear()

    for key in ctx.items():
        batch.append(key)
        if len(batch) >= _BATCH:
            run()
    if batch:
        run()


@registry.handler(JOB_TYPE)
def timeshift(ctx: JobContext) -> None:
    shift = timedelta(seconds=ctx.params["by_seconds"])
    _in_batches(ctx, lambda ids: apply_shift(ctx.session_factory, ctx.job_id, ids, shift))


@registry.handler(UNDO_JOB_TYPE)
def timeshift_undo(ctx: JobContext) -> None:
    target = ctx.params["job_id"]
    _in_batches(ctx, lambda ids: apply_undo(ctx.session_factory, target, ctx.job_id, ids))


def _insert(session: Session) -> Any:
    pg = session.get_bind().dialect.name == "postgresql"
    return (postgresql if pg else sqlite).insert(timeshift_entries)


@transactional
def apply_shift(
    session_factory: sessionmaker[Session], job_id: str, asset_ids: list[int], shift: timedelta
) -> dict[int, tuple[str, str]]:
    """Shift these assets in one transaction, journalling old and new values first.
    An asset this job already shifted is left alone (a re-run item). Returns the
    failures: asset id -> (code, message)."""
    failures: dict[int, tuple[str, str]] = {}
    now = utc_now()
    with write_session(session_factory) as session:
        rows = session.execute(
            select(*_PLAN_COLUMNS).where(assets.c.id.in_(asset_ids)).with_for_update()
        ).all()
        by_id = {row.id: row for row in rows}
        for asset_id in asset_ids:
            row = by_id.get(asset_id)
            if row is None:
                failures[asset_id] = ("asset_not_found", f"asset {asset_id} no longer exists")
                continue
            try:
                after = shifted(row._mapping, shift)
            except OverflowError:
                failures[asset_id] = (
                    "shift_out_of_range",
                    f"{row.taken_local} shifted by {format_shift(shift)} is past year 9999",
                )
                continue
            recorded = session.execute(
                _insert(session)
                .values(
                    job_id=job_id,
                    asset_id=asset_id,
                    old_taken_local=row.taken_local,
                    old_taken_offset_minutes=row.taken_offset_minutes,
                    old_taken_utc=row.taken_utc,
                    old_taken_order=row.taken_order,
                    old_tz_name=row.tz_name,
                    new_taken_local=after.taken_local,
                    new_taken_offset_minutes=after.taken_offset_minutes,
                    new_taken_utc=after.taken_utc,
                    new_taken_order=after.taken_order,
                    new_tz_name=after.tz_name,
                    shifted_at=now,
                )
                .on_conflict_do_nothing(index_elements=["job_id", "asset_id"])
                .returning(timeshift_entries.c.id)
            ).first()
            if recorded is None:
                continue  # shifted by this job before a crash: never twice
            session.execute(
                update(assets)
                .where(assets.c.id == asset_id)
                .values(
                    taken_local=after.taken_local,
                    taken_offset_minutes=after.taken_offset_minutes,
                    taken_utc=after.taken_utc,
                    taken_order=after.taken_order,
                    tz_name=after.tz_name,
                    updated_at=now,
                )
            )
    return failures


@transactional
def apply_undo(
    session_factory: sessionmaker[Session],
    shift_job_id: str,
    undo_job_id: str,
    asset_ids: list[int],
) -> dict[int, tuple[str, str]]:
    """Restore the journalled old values of these assets, each only if it still holds
    exactly what the shift wrote. Returns the failures: asset id -> (code, message)."""
    failures: dict[int, tuple[str, str]] = {}
    now = utc_now()
    entries = timeshift_entries.c
    with write_session(session_factory) as session:
        rows = session.execute(
            select(timeshift_entries)
            .where(entries.job_id == shift_job_id, entries.asset_id.in_(asset_ids))
            .with_for_update()
        ).all()
        by_asset = {row.asset_id: row for row in rows}
        for asset_id in asset_ids:
            entry = by_asset.get(asset_id)
            if entry is None:
                failures[asset_id] = ("not_shifted", f"timeshift did not change asset {asset_id}")
                continue
            if entry.undone_at is not None:
                continue  # undone before a crash
            restored = changed_rows(
                session,
                update(assets)
                .where(
                    assets.c.id == asset_id,
                    assets.c.taken_local == entry.new_taken_local,
                    assets.c.taken_offset_minutes.is_not_distinct_from(
                        entry.new_taken_offset_minutes
                    ),
                    assets.c.taken_utc.is_not_distinct_from(entry.new_taken_utc),
                    assets.c.tz_name.is_not_distinct_from(entry.new_tz_name),
                )
                .values(
                    taken_local=entry.old_taken_local,
                    taken_offset_minutes=entry.old_taken_offset_minutes,
                    taken_utc=entry.old_taken_utc,
                    taken_order=entry.old_taken_order,
                    tz_name=entry.old_tz_name,
                    updated_at=now,
                ),
            )
            if not restored:
                failures[asset_id] = (
                    "changed_since_shift",
                    f"asset {asset_id} was changed after the shift (by a later timeshift?): "
                    "undo that one first",
                )
                continue
            session.execute(
                update(timeshift_entries)
                .where(entries.id == entry.id)
                .values(undone_at=now, undo_job_id=undo_job_id)
            )
    return failures
