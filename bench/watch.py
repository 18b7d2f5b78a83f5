"""Benchmark watched sources (issue #31): how soon a settled file is listed, and what
a burst costs against a plain import of the same files.

Run with ``.venv/bin/python -m bench.watch [--photos N] [--drops N] [--quick]``
(``--quick``: 500 photos, 10 drops). On a fresh SQLite library each time:

1. latency: a ``photo-pipeline watch`` and a ``photo-pipeline worker`` run; photos are
   copied into the watched folder one at a time, each once the one before is listed;
   the latency is from the moment the file settled (its last write plus the settle
   time: before that it may not be taken) to its file row being listed as present,
   p50 and p95 (target: p50 < 5 s on a local disk); the write-to-listed time beside;
2. a burst: N photos copied into the watched folder at once, timed from the last
   copy to every one listed, with the render and near-duplicate jobs after them
   ended, less the settle time; against ``photo-pipeline import DIR --wait`` of the
   same N photos (target <= 1.2x), and from the first copy (the copying included:
   the scans start while it goes on). Both sides run the same worker (every core,
   item threads); CPU seconds are the processes' own (wait4), idle polling included.
"""

from __future__ import annotations

import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path

from bench import _harness as h
from bench import _photos

ROOT = Path(tempfile.gettempdir()) / "pp_bench_watch"
CLI = Path(sys.executable).parent / "photo-pipeline"
SIZE = (1024, 768)
SETTLE = 2.0  # the default (PHOTO_PIPELINE_WATCH_SETTLE_SECONDS)


def photo_set(count: int) -> Path:
    """``count`` photo-like JPEGs, made once (in parallel) and reused."""
    folder = ROOT / f"photos-{count}-{SIZE[0]}x{SIZE[1]}"
    folder.mkdir(parents=True, exist_ok=True)
    missing = [
        (str(folder / f"IMG_{n:05d}.jpg"), n)
        for n in range(count)
        if not (folder / f"IMG_{n:05d}.jpg").exists()
    ]
    if missing:
        with h.spawn_pool(2) as pool:
            list(pool.map(_photos.write_jpeg, *zip(*missing, strict=True), [SIZE] * len(missing)))
    return folder


class Library:
    """A fresh library (SQLite) in its own folder, and the commands run on it."""

    def __init__(self, name: str) -> None:
        self.root = ROOT / name
        shutil.rmtree(self.root, ignore_errors=True)
        self.home = self.root / "home"
        self.folder = self.root / "watched"
        self.folder.mkdir(parents=True)
        self.env = h.child_env(
            PHOTO_PIPELINE_HOME=str(self.home),
            PHOTO_PIPELINE_DATABASE_URL=f"sqlite:///{self.root / 'library.sqlite3'}",
            PHOTO_PIPELINE_WATCH_SETTLE_SECONDS=str(SETTLE),
            PHOTO_PIPELINE_WATCH_ACQUIRE_SECONDS="0.2",
        )
        self._processes: list[subprocess.Popen[bytes]] = []
        self._sessions = None

    def command(self, *args: str) -> h.Finished:
        return h.run_command([str(CLI), *args], self.env)

    def start(self, *args: str) -> None:
        log = open(self.root / f"{args[0]}.log", "w")  # noqa: SIM115 (the process's)
        self._processes.append(
            subprocess.Popen([str(CLI), *args], env=self.env, stdout=log, stderr=log)
        )

    def stop(self) -> float:
        """Stop the processes started (SIGTERM); their CPU seconds."""
        cpu = 0.0
        for process in self._processes:
            process.send_signal(signal.SIGTERM)
        for process in self._processes:
            _, _, usage = os.wait4(process.pid, 0)
            cpu += usage.ru_utime + usage.ru_stime
        self._processes.clear()
        return cpu

    def sessions(self):
        if self._sessions is None:
            from photo_pipeline.db import open_database

            self._sessions = open_database(self.env["PHOTO_PIPELINE_DATABASE_URL"])
        return self._sessions

    def present(self) -> set[str]:
        from sqlalchemy import select

        from photo_pipeline.db import read_session
        from photo_pipeline.db.schema import files

        query = select(files.c.path).where(files.c.state == "present")
        with read_session(self.sessions()) as session:
            return set(session.scalars(query))

    def jobs_ended(self) -> bool:
        from sqlalchemy import func, select

        from photo_pipeline.db import read_session
        from photo_pipeline.db.schema import ACTIVE_JOB_STATES, jobs

        query = select(func.count()).where(jobs.c.state.in_(ACTIVE_JOB_STATES))
        with read_session(self.sessions()) as session:
            return not session.scalar(query)

    def watched_by_someone(self) -> bool:
        from sqlalchemy import func, select

        from photo_pipeline.db import read_session
        from photo_pipeline.db.schema import source_watchers

        with read_session(self.sessions()) as session:
            return bool(session.scalar(select(func.count()).select_from(source_watchers)))


def _wait(condition, what: str, timeout: float = 1800) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out waiting for {what}")
        time.sleep(0.01)


def _watching(name: str) -> Library:
    """A library with an empty watched folder, its watcher and worker running."""
    lib = Library(name)
    lib.command("import", str(lib.folder), "--watch", "--wait")
    lib.start("watch", "--log-level", "warning")
    lib.start("worker", "--poll-seconds", "0.2", "--log-level", "warning")
    _wait(lib.watched_by_someone, "the watcher")
    return lib


def latency(photos: Path, drops: int) -> None:
    h.heading(f"latency: {drops} photos dropped one at a time (settle time {SETTLE:g} s)")
    lib = _watching("latency")
    from_settled, from_written = [], []
    try:
        for source in sorted(photos.iterdir())[:drops]:
            shutil.copy2(source, lib.folder / source.name)
            written = time.monotonic()
            _wait(lambda name=source.name: name in lib.present(), source.name, 120)
            listed = time.monotonic()
            from_written.append(listed - written)
            from_settled.append(listed - written - SETTLE)
    finally:
        lib.stop()
    quantiles = statistics.quantiles(from_settled, n=20, method="inclusive")
    p50, p95 = statistics.median(from_settled), quantiles[18]
    h.figure("latency_p50_seconds", p50)
    h.figure("latency_p95_seconds", p95)
    h.figure("written_to_listed_p50_seconds", statistics.median(from_written))
    h.table(
        ["from", "p50 s", "p95 s", "max s"],
        [
            ["settled (target p50 < 5 s)", p50, p95, max(from_settled)],
            [
                "written",
                statistics.median(from_written),
                statistics.quantiles(from_written, n=20, method="inclusive")[18],
                max(from_written),
            ],
        ],
    )


def burst(photos: Path, count: int) -> None:
    h.heading(f"a burst of {count} photos against `import --wait` of the same")
    names = sorted(photos.iterdir())[:count]
    plain = Library("import")
    for source in names:
        os.link(source, plain.folder / source.name)
    started = time.perf_counter()
    imported = plain.command("import", str(plain.folder), "--wait")
    import_wall = time.perf_counter() - started

    watched = _watching("burst")
    cpu_before = 0.0
    try:
        first_written = time.perf_counter()
        for source in names:
            shutil.copy2(source, watched.folder / source.name)
        last_written = time.perf_counter()
        expected = {source.name for source in names}
        _wait(lambda: expected <= watched.present(), "the burst listed")
        listed = time.perf_counter() - last_written
        _wait(watched.jobs_ended, "the jobs after it")
        ended = time.perf_counter() - last_written
        since_first = time.perf_counter() - first_written
    finally:
        cpu_before = watched.stop()
    burst_wall = ended - SETTLE
    scans = _watcher_scans(watched)
    h.table(
        ["side", "wall s", "CPU s"],
        [
            ["import --wait (its start included)", import_wall, imported.cpu],
            ["burst: last copy -> all listed, less settle", listed - SETTLE, ""],
            ["burst: last copy -> jobs ended, less settle", burst_wall, cpu_before],
            ["burst: first copy -> jobs ended (copies included)", since_first, ""],
        ],
    )
    h.note(
        "the scans start while the copies go on: from the last copy flatters the burst, "
        "from the first includes the copying; the CPU ratio is the steadier figure. "
        "From the first copy: "
        + h.ratio(since_first, import_wall, name="first_copy_over_import_wall")
    )
    h.note(
        f"wall ratio {h.ratio(burst_wall, import_wall, name='burst_over_import_wall')} "
        f"(target <= 1.2x); CPU ratio "
        f"{h.ratio(cpu_before, imported.cpu, name='burst_over_import_cpu')}; "
        f"{len(scans)} scans of {sum(scans)} paths"
    )
    h.figure("scans", scans)


def _watcher_scans(lib: Library) -> list[int]:
    from sqlalchemy import select

    from photo_pipeline.db import read_session
    from photo_pipeline.db.schema import jobs

    query = select(jobs.c.params).where(jobs.c.job_type == "scan").order_by(jobs.c.seq)
    with read_session(lib.sessions()) as session:
        return [
            len(params["sources"][0]["paths"])
            for params in session.scalars(query)
            if "paths" in params["sources"][0]
        ]


def body(args: Namespace) -> int:
    count, drops = (500, 10) if args.quick else (args.photos, args.drops)
    photos = photo_set(count)
    latency(photos, drops)
    burst(photos, count)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--photos", type=int, default=5000, help="the burst (default 5000)")
    parser.add_argument("--drops", type=int, default=40, help="photos timed one by one")
    parser.add_argument("--quick", action="store_true", help="500 photos, 10 drops")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
