"""Benchmark the worker runtime (Worker, JobContext) against the bare work it runs.

Run with ``.venv/bin/python -m bench.worker [--quick]``. It prints:

1. the coordination cost per item: one job of no-op items run by an in-process
   ``Worker(...).run()`` in burst mode, concurrency 1 and 2 (thread executor), on SQLite
   and PostgreSQL (with and without planner statistics that know the job); then the
   same items split over 1 and 2 ``photo-pipeline worker --burst`` processes;
2. an image job (JPEG → draft → 256 px thumbnail → EXIF orientation → WebP): the bare
   loop (sequential, 2 threads, 2 spawned processes, fresh or warm) vs the same work
   through the runtime with the thread and the process executor, the coordination
   share of the wall time, and which executor is faster.

Databases are fresh (a SQLite file, a PostgreSQL schema from
``PHOTO_PIPELINE_TEST_DATABASE_URL``) and removed afterwards, like the photos. Timings
on this small shared machine are noisy: read the ratios, measured in the same run.
"""

from __future__ import annotations

import sys
import time
from argparse import Namespace
from collections.abc import Callable
from typing import Any

from bench import _harness as h
from bench._databases import backends
from bench._worker_common import FULL, POOL, QUICK
from bench._worker_images import image_section, machine_parallelism
from bench._worker_noop import noop_section, processes_section


def timed(section: Callable[..., Any], *args: Any) -> Any:
    started = time.perf_counter()
    result = section(*args)
    h.note(f"(section took {time.perf_counter() - started:.0f} s)")
    return result


def body(args: Namespace) -> None:
    sizes = QUICK if args.quick else FULL
    print(f"worker runtime benchmark ({'quick' if args.quick else 'full'} run); "
          f"{h.versions('sqlalchemy', 'pillow')}")  # fmt: skip
    measured = backends()
    parallel = h.figure("machine parallelism", machine_parallelism(sizes.image_rounds))
    print(
        f"2 processes of pure-Python work finish {parallel:.2f}x as fast as 1 process doing "
        f"both (2.00x = {POOL} whole cores; less: the cores are busy with other work)"
    )
    in_process = timed(noop_section, measured, sizes)
    timed(processes_section, measured, sizes, in_process)
    timed(image_section, measured, sizes)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, a smoke run")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
