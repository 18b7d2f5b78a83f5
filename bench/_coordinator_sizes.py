"""The coordinator benchmark's sizes (full and quick runs), its job types, and how
long worker processes may take to start."""

from __future__ import annotations

from dataclasses import dataclass

JOB_TYPE = "noop"
OTHER_JOB_TYPE = "thumbnail"
START_TIMEOUT_S = 120  # for worker processes to start


@dataclass(frozen=True)
class Sizes:
    jobs: int  # no-op jobs per throughput run
    items_total: int  # items of each item-update job
    items_single: int  # items updated one by one (the rest of that job stays queued)
    item_batch: int
    queues: tuple[int, int]  # short and long queue for the claim latency
    claims: int  # timed claims per queue size
    rounds: int  # throughput runs per configuration (the median is shown)
    enqueue: int  # jobs enqueued in batches
    wakeups: int  # wake-up latency samples


FULL = Sizes(
    jobs=2000, items_total=20_000, items_single=2_000, item_batch=500,
    queues=(1_000, 100_000), claims=200, rounds=5, enqueue=50_000, wakeups=50,
)  # fmt: skip
QUICK = Sizes(
    jobs=200, items_total=2_000, items_single=200, item_batch=500,
    queues=(1_000, 10_000), claims=50, rounds=1, enqueue=5_000, wakeups=10,
)  # fmt: skip
