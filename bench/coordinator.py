"""Benchmark the durable job coordinator (JobService) on SQLite and PostgreSQL.

Run with ``.venv/bin/python -m bench.coordinator [--quick] [--only SECTIONS] [--backends B]``
(``--help``). It prints, per backend:

1. claim + complete throughput of no-op jobs with 1 and 4 worker processes through the
   bare JobService API (claim → succeeded in a loop: the coordinator's own cost);
1b. (``peers``) the project's real ``Worker`` runtime against each peer's real worker
   on the same PostgreSQL: Procrastinate, PgQueuer (batch 10 and 1), Celery + Redis
   (each optional, the ``bench`` extra); ≥ 5 rounds, the order turning every round,
   medians and min–max with the load average (``bench/_coordinator_peers.py``);
2. item updates per second, batched (``set_items``) vs one by one (``set_item``);
3. median claim latency with a short vs a long queue, and behind a long queue of
   another job type.

Every measurement gets a fresh database (a SQLite file in a temporary directory, a
PostgreSQL schema or database) created under a unique name and removed afterwards:
never one that another run or the test suite uses. PostgreSQL comes from
``PHOTO_PIPELINE_TEST_DATABASE_URL``; when it is unreachable only SQLite is measured.
Timings on a small shared machine are noisy: compare the ratios, not the raw numbers.
"""

from __future__ import annotations

import sys
from argparse import Namespace
from collections.abc import Callable
from dataclasses import replace

from bench import _harness as h
from bench._coordinator_batches import enqueue_section, items_section
from bench._coordinator_latency import latency_section, wakeup_section
from bench._coordinator_peers import peers_section
from bench._coordinator_sizes import FULL, QUICK, Sizes
from bench._coordinator_throughput import throughput_section
from bench._databases import backends


def body(args: Namespace) -> int:
    sizes = QUICK if args.quick else FULL
    if args.rounds is not None:
        sizes = replace(sizes, rounds=args.rounds)
    only = [name.strip() for name in args.only.split(",") if name.strip()]
    unknown = sorted(set(only) - set(SECTIONS))
    if unknown:
        print(f"unknown sections {unknown}; choose from {list(SECTIONS)}")
        return 2
    peers = h.versions("sqlalchemy", "psycopg", "procrastinate", "pgqueuer", "celery")
    print(f"coordinator benchmark ({'quick' if args.quick else 'full'} run); {peers}")
    measured = backends(args.backends)
    for name in only:
        SECTIONS[name](measured, sizes)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    parser.add_argument(
        "--only",
        default=",".join(SECTIONS),
        help=f"comma-separated sections to run, of {','.join(SECTIONS)} (default: all)",
    )
    parser.add_argument(
        "--rounds", type=int, default=None, help="throughput rounds (default: by size)"
    )
    parser.add_argument(
        "--backends", default="sqlite,postgresql", help="sqlite, postgresql or both (default)"
    )
    return h.run(parser, body, argv)


SECTIONS: dict[str, Callable[[list[str], Sizes], None]] = {
    "throughput": throughput_section,
    "peers": peers_section,
    "items": items_section,
    "latency": latency_section,
    "enqueue": enqueue_section,
    "wakeup": wakeup_section,
}


if __name__ == "__main__":
    sys.exit(main())
