"""A token bucket per client address for failed authentication: a small burst, then
one attempt per second or so. In memory, bounded, and forgotten when full again."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class FailedAuthLimiter:
    """``capacity`` failures in a burst per address, refilled at ``per_second``.
    At most ``max_clients`` addresses are tracked: past that, buckets that have
    refilled are dropped first, then the oldest (an attacker with very many
    addresses gets fresh buckets, but memory stays bounded)."""

    def __init__(
        self,
        capacity: float = 20,
        per_second: float = 1.0,
        max_clients: int = 10_000,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.capacity = capacity
        self.per_second = per_second
        self.max_clients = max_clients
        self._clock = clock
        self._buckets: dict[str, tuple[float, float]] = {}  # address -> (tokens, at)
        self._lock = threading.Lock()

    def _tokens(self, client: str, now: float) -> float:
        tokens, at = self._buckets.get(client, (self.capacity, now))
        return min(self.capacity, tokens + (now - at) * self.per_second)

    def wait_seconds(self, client: str) -> float:
        """0 while ``client`` may still try; else how long until it may."""
        with self._lock:
            tokens = self._tokens(client, self._clock())
        return 0.0 if tokens >= 1 else (1 - tokens) / self.per_second

    def failed(self, client: str) -> None:
        with self._lock:
            now = self._clock()
            left = max(0.0, self._tokens(client, now) - 1)
            self._buckets.pop(client, None)  # re-inserted last: the dict is oldest first
            self._buckets[client] = (left, now)
            if len(self._buckets) > self.max_clients:
                self._prune(now)

    def _prune(self, now: float) -> None:
        full = [c for c in self._buckets if self._tokens(c, now) >= self.capacity]
        for client in full:
            del self._buckets[client]
        while len(self._buckets) > self.max_clients:
            del self._buckets[next(iter(self._buckets))]  # the oldest failure first
