"""How watchers behave: settle time, poll period, lease, from the environment."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class WatchConfig:
    # A file is taken once its size and mtime stayed the same this long (and no
    # process has it open for writing). PHOTO_PIPELINE_WATCH_SETTLE_SECONDS.
    settle_seconds: float = 2.0
    # A polled source (a network mount, no inotify) is rescanned this often.
    # PHOTO_PIPELINE_WATCH_POLL_SECONDS.
    poll_seconds: float = 60.0
    # A watched (inotify) source is rescanned this often all the same: what an
    # overflowing event queue lost. PHOTO_PIPELINE_WATCH_RESCAN_SECONDS.
    rescan_seconds: float = 3600.0
    # A watcher's lease on its source; renewed every third of it.
    # PHOTO_PIPELINE_WATCH_LEASE_SECONDS.
    lease_seconds: float = 30.0
    # How often a process looks for watched sources nobody holds (a new one, or one
    # whose watcher died). PHOTO_PIPELINE_WATCH_ACQUIRE_SECONDS.
    acquire_seconds: float = 5.0
    # How often pending paths are checked for having settled.
    tick_seconds: float = 0.25
    # Paths handed to one scan at most.
    max_batch: int = 10_000
    # Poll every source, local disks too (PHOTO_PIPELINE_WATCH_POLL=1).
    force_poll: bool = False

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> WatchConfig:
        env = os.environ if environ is None else environ
        default = cls()
        settle = _number(env, "SETTLE_SECONDS", default.settle_seconds)
        return cls(
            settle_seconds=settle,
            poll_seconds=_number(env, "POLL_SECONDS", default.poll_seconds),
            rescan_seconds=_number(env, "RESCAN_SECONDS", default.rescan_seconds),
            lease_seconds=max(1.0, _number(env, "LEASE_SECONDS", default.lease_seconds)),
            acquire_seconds=_number(env, "ACQUIRE_SECONDS", default.acquire_seconds),
            tick_seconds=max(0.02, min(default.tick_seconds, settle / 4)),
            force_poll=env.get("PHOTO_PIPELINE_WATCH_POLL", "") in ("1", "true", "yes"),
        )


def _number(env: Mapping[str, str], name: str, default: float) -> float:
    key = f"PHOTO_PIPELINE_WATCH_{name}"
    raw = env.get(key)
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{key} must be a number, got {raw!r}") from None
    if not value >= 0:
        raise ValueError(f"{key} must be >= 0, got {raw!r}")
    return value
