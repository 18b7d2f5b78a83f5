"""When a failed or interrupted job runs again: exponential backoff with jitter."""

from __future__ import annotations

import random
from dataclasses import dataclass
from datetime import timedelta


@dataclass(frozen=True)
class RetryPolicy:
    """Attempt ``n`` waits a random time in ``[d/2, d]`` with ``d = base * 2**(n-1)``
    capped at ``max_seconds`` ("equal jitter": spread out, never immediate).

    Infrastructure failures (a worker died, a lease expired, the database went away)
    are not the handler's fault: they refund the attempt and spend a separate, larger
    budget of ``max_interruptions`` instead, backing off by the interruption count."""

    base_seconds: float = 2.0
    max_seconds: float = 600.0
    max_interruptions: int = 20

    def delay(self, attempt: int, rng: random.Random) -> timedelta:
        ceiling = min(self.max_seconds, self.base_seconds * 2 ** max(attempt - 1, 0))
        return timedelta(seconds=rng.uniform(ceiling / 2, ceiling))
