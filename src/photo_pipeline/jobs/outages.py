"""Failures of what a worker stands on rather than of a handler: the database going
away (waited out with a capped, jittered backoff, one log line per outage) and a
full disk."""

from __future__ import annotations

import errno
import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any

from photo_pipeline.db.errors import DatabaseUnavailable
from photo_pipeline.jobs.retry import RetryPolicy

# While the database is unreachable, try again after a capped, jittered backoff.
RECONNECT = RetryPolicy(base_seconds=0.25, max_seconds=10.0)
_DISK_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})


class DatabaseWait:
    """Waits out an unreachable database for a worker: ``probe`` (a heartbeat) is
    tried with the ``RECONNECT`` backoff until it answers or ``stop`` is set."""

    def __init__(
        self,
        probe: Callable[[], object],
        stop: threading.Event,
        rng: random.Random,
        log: logging.LoggerAdapter[logging.Logger],
    ) -> None:
        self._probe = probe
        self._stop = stop
        self._rng = rng
        self._log = log

    def wait(self, outage: DatabaseUnavailable, *, logged: bool = False) -> bool:
        """Probe the database with a capped, jittered backoff until it answers (True)
        or the worker is told to stop (False). One log line per outage, not one
        traceback per attempt."""
        if not logged:
            self._log.warning("database unavailable, retrying with backoff: %s", outage.detail)
        started = time.monotonic()
        attempt = 0
        while True:
            attempt += 1
            if self._stop.wait(RECONNECT.delay(attempt, self._rng).total_seconds()):
                return False
            try:
                self._probe()
            except DatabaseUnavailable:
                continue
            self._log.warning("database reachable again after %.1f s", time.monotonic() - started)
            return True

    def ride_out(self, action: Callable[[], Any]) -> bool:
        """Run ``action`` once the database answers; False if stopped before."""
        while True:
            try:
                action()
                return True
            except DatabaseUnavailable as exc:
                if not self.wait(exc):
                    return False


def database_outage(exc: BaseException) -> DatabaseUnavailable | None:
    """The ``DatabaseUnavailable`` behind ``exc`` (itself, or what it was raised
    from), if the failure was the database going away rather than the handler."""
    found = _cause(exc, lambda e: isinstance(e, DatabaseUnavailable))
    return found if isinstance(found, DatabaseUnavailable) else None


def disk_full(exc: BaseException) -> OSError | None:
    """The ``ENOSPC``/``EDQUOT`` error behind ``exc``: the disk, not the handler."""
    found = _cause(exc, lambda e: isinstance(e, OSError) and e.errno in _DISK_FULL)
    return found if isinstance(found, OSError) else None


def _cause(exc: BaseException, matches: Callable[[BaseException], bool]) -> BaseException | None:
    """``exc`` or the first exception in its cause/context chain that ``matches``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if matches(current):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None
