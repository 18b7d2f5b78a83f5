"""When a schedule ticks: a cron expression read in the schedule's time zone, or a
fixed interval. Pure functions of aware UTC datetimes.

Cron is read against wall-clock time (``croniter`` on naive local times, placed in
the zone by ``zoneinfo``), so each wall-clock time the expression names ticks once:

- spring forward: a time the clocks skip (02:30 on the night they jump from 02:00 to
  03:00) ticks as if they had not jumped yet, one gap later (03:30), on that day only;
- fall back: a time that happens twice (02:30 on the night they go back) ticks at
  its first occurrence only, so a nightly job runs once, not twice.

An interval ticks every ``every`` from the moment the schedule was made, whatever
the zone.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from croniter import croniter

from photo_pipeline.jobs.errors import InvalidArgument

MIN_INTERVAL = timedelta(minutes=1)
MAX_INTERVAL = timedelta(days=366)
# Ticks a search may step over before it is sure none fits: enough for a minutely
# expression across a fall-back hour, few enough that no input loops for long.
_MAX_STEPS = 10_000
_UNITS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_INTERVAL = re.compile(r"(?:\d{1,9}[wdhms]){1,5}")


def check_cron(expression: str) -> str:
    """``expression`` (five fields, or an alias such as ``@daily``) normalised, or
    ``InvalidArgument`` (``invalid_cron``)."""
    text = " ".join(str(expression).split())
    fields = text.split(" ")
    aliased = len(fields) == 1 and text.startswith("@")
    if not text or len(text) > 200 or not (aliased or len(fields) == 5) or not _valid(text):
        raise InvalidArgument(
            "invalid_cron",
            f"{expression!r} is not a cron expression: five fields, minute hour day-of-month "
            "month day-of-week (e.g. '0 3 * * *'), or @hourly, @daily, @weekly, @monthly",
        )
    if text == "@reboot":
        raise InvalidArgument("invalid_cron", "@reboot names no time")
    # croniter's random (R) and hashed (H) values differ from one process to another:
    # every worker must compute the same ticks.
    if any(token.upper() in ("R", "H") for token in re.split(r"[\s,/()-]+", text)):
        raise InvalidArgument(
            "invalid_cron", f"{expression!r}: random (R) and hashed (H) values are not supported"
        )
    return text


def _valid(text: str) -> bool:
    try:
        return bool(croniter.is_valid(text))
    except Exception:  # croniter's own checks may raise on odd input
        return False


def parse_interval(text: str) -> timedelta:
    """``6h``, ``30m``, ``1d12h``, ``2w``: a duration between one minute and a year, or
    ``InvalidArgument`` (``invalid_interval``)."""
    compact = str(text).strip().lower().replace(" ", "")
    if not _INTERVAL.fullmatch(compact):
        raise InvalidArgument(
            "invalid_interval",
            f"{text!r} is not an interval: numbers with units (w, d, h, m, s), e.g. 6h, 30m, 1d12h",
        )
    seconds = sum(int(n) * _UNITS[unit] for n, unit in re.findall(r"(\d+)([wdhms])", compact))
    if seconds > MAX_INTERVAL.total_seconds():
        seconds = int(MAX_INTERVAL.total_seconds()) + 1  # refused below, as too long
    return check_interval(timedelta(seconds=seconds))


def check_interval(every: timedelta) -> timedelta:
    if not MIN_INTERVAL <= every <= MAX_INTERVAL:
        raise InvalidArgument(
            "invalid_interval", f"an interval is one minute to a year, got {format_interval(every)}"
        )
    return every


def format_interval(every: timedelta) -> str:
    """The shortest text ``parse_interval`` reads back: ``6h``, ``1d12h``, ``90s`` → ``1m30s``."""
    left = int(every.total_seconds())
    parts = []
    for unit, size in _UNITS.items():
        if unit == "w" and left % size:
            continue  # 10d, not 1w3d
        count, left = divmod(left, size)
        if count:
            parts.append(f"{count}{unit}")
    return "".join(parts) or "0s"


def zone(name: str) -> ZoneInfo:
    """The IANA time zone ``name``, or ``InvalidArgument`` (``invalid_time_zone``)."""
    try:
        if not name or len(name) > 64 or name != name.strip() or name.startswith(("/", ".")):
            raise ValueError(name)
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, TypeError, OSError):
        raise InvalidArgument(
            "invalid_time_zone", f"{name!r} is not an IANA time zone (e.g. Europe/Paris, UTC)"
        ) from None


@dataclass(frozen=True)
class Timing:
    """A schedule's ticks. ``anchor``: when it was made (an interval counts from it)."""

    cron: str | None
    every: timedelta | None
    zone: ZoneInfo
    anchor: datetime

    def next_after(self, moment: datetime) -> datetime:
        """The first tick strictly after ``moment``."""
        if self.every is not None:
            if moment < self.anchor + self.every:
                return self.anchor + self.every
            return self.anchor + ((moment - self.anchor) // self.every + 1) * self.every
        assert self.cron is not None
        try:
            steps = croniter(self.cron, self._wall(moment))
            for _ in range(_MAX_STEPS):
                tick = self._placed(steps.get_next(datetime))
                if tick > moment:  # a wall time of a fall-back hour may lie before it
                    return tick
        except Exception:  # croniter on odd input: CroniterError, ValueError, OverflowError…
            pass  # February 30th: a valid expression that names no day
        raise InvalidArgument("invalid_cron", f"{self.cron!r} names no time after {moment}")

    def latest_at_or_before(self, moment: datetime) -> datetime | None:
        """The last tick at or before ``moment`` (None: an interval not yet ticked)."""
        if self.every is not None:
            count = (moment - self.anchor) // self.every
            return None if count < 1 else self.anchor + count * self.every
        assert self.cron is not None
        try:
            # From one second on: croniter's previous tick is strictly before its start.
            steps = croniter(self.cron, self._wall(moment) + timedelta(seconds=1))
            for _ in range(_MAX_STEPS):
                tick = self._placed(steps.get_prev(datetime))
                if tick <= moment:  # a skipped wall time is placed one gap later
                    return tick
        except Exception:  # croniter on odd input: CroniterError, ValueError, OverflowError…
            pass
        return None

    def _wall(self, moment: datetime) -> datetime:
        return moment.astimezone(self.zone).replace(tzinfo=None)

    def _placed(self, wall: datetime) -> datetime:
        # fold=0: a repeated wall time is its first occurrence; a skipped one keeps the
        # offset before the jump (PEP 495), landing one gap later.
        return wall.replace(tzinfo=self.zone, fold=0).astimezone(UTC)
