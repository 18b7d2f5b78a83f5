"""Benchmark verify: ``photo-pipeline verify --wait --json`` against a bare BLAKE3
pass over the same files, in the same run, rounds alternating.

Run with ``.venv/bin/python -m bench.verify [--files 400] [--rounds 3] [--cold]``.

0. The photo set: ``--files`` noise JPEGs of 1 to 5 MB (five base photos, one per
   size, each copy made unique by a JPEG comment: bench.organize's recipe), made once
   into /tmp/pp_bench_verify and reused; a fresh SQLite library (its home beside the
   set) has it catalogued by the scan job alone (not timed).
1. Per round, in turns (A B C, then C B A): the command ``verify --wait --json`` as a
   process, timed from start to exit, and its job's own run (claim to finish, from
   the job row); a bare BLAKE3 loop in this process (64 KiB reads into one reused
   buffer, as the pipeline hashes), one thread; the same with blake3's
   ``max_threads`` (all cores on each file's tree) over whole-file reads.
   The ratios printed are baseline seconds / verify seconds (1.00x: as fast as one
   bare pass), medians of the rounds.

Page cache: warm by default (one untimed pass reads every file first, and 1-2 GB
stays cached); ``--cold`` drops every file's pages (``posix_fadvise DONTNEED``)
before each case of each round, so both sides read from the disk.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench import organize
from bench.organize import base_photo, with_comment

ROOT = Path(tempfile.gettempdir()) / "pp_bench_verify"
SIZES_MB = (1.0, 2.0, 3.0, 4.0, 5.0)


def make_set(files: int) -> Path:
    folder = ROOT / f"photos-{files}"
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    bases = [base_photo(i, mb) for i, mb in enumerate(SIZES_MB)]
    for n in range(files):
        target = folder / f"card{n % 3}" / f"IMG_{n:05d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(with_comment(bases[n % len(bases)], f"bench photo {n}"))
    done.touch()
    return folder


def set_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.jpg"))


def drop_cache(files: list[Path]) -> None:
    for path in files:
        fd = os.open(path, os.O_RDONLY)
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        finally:
            os.close(fd)


def blake3_pass(files: list[Path]) -> float:
    """Seconds of ``bench.organize``'s one-thread BLAKE3 pass over ``files``."""
    started = time.perf_counter()
    organize.blake3_pass(files)
    return time.perf_counter() - started


def blake3_threaded(files: list[Path]) -> float:
    import blake3

    started = time.perf_counter()
    for path in files:
        blake3.blake3(max_threads=blake3.blake3.AUTO).update(path.read_bytes()).hexdigest()
    return time.perf_counter() - started


def environment(home: Path) -> dict[str, str]:
    return h.child_env(
        PHOTO_PIPELINE_HOME=str(home),
        PHOTO_PIPELINE_DATABASE_URL=f"sqlite:///{home / 'library.db'}",
    )


def fresh_library(source: Path) -> Path:
    from bench.organize import scan

    home = ROOT / "home"
    shutil.rmtree(home, ignore_errors=True)
    home.mkdir(parents=True)
    env = environment(home)
    subprocess.run([sys.executable, "-m", "photo_pipeline", "init"], env=env, check=True,
                   capture_output=True)  # fmt: skip
    scan(home, source)
    return home


def verify(home: Path, files: int) -> tuple[float, float, float]:
    """(seconds of the command, seconds of its job, CPU seconds of the command)."""
    command = [sys.executable, "-m", "photo_pipeline", "verify", "--wait", "--json"]
    done = h.run_command(command, environment(home))
    report = json.loads(done.stdout)
    if report["checked"] != files or report["ok"] != files:
        raise SystemExit(f"verify checked {report['checked']}, ok {report['ok']} of {files}")
    job = report["job"]
    ran = (
        datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["started_at"])
    ).total_seconds()
    return done.wall, ran, done.cpu


def body(args: Namespace) -> None:
    h.heading("verify against a bare BLAKE3 pass over the same files")
    source = make_set(args.files)
    files = set_files(source)
    total = sum(p.stat().st_size for p in files)
    cache = "cold (fadvise DONTNEED before each case)" if args.cold else "warm"
    h.note(f"{len(files)} photos, {total / 1e6:,.0f} MB in {source}; page cache: {cache}")
    home = fresh_library(source)
    blake3_pass(files)  # warm: every file read once
    loads: list[str] = []

    def case(call: Any) -> Any:
        if args.cold:
            drop_cache(files)
        result = call()
        loads.append(" / ".join(f"{v:.1f}" for v in os.getloadavg()))
        return result

    runs = h.alternate(
        {
            "verify": lambda: case(lambda: verify(home, len(files))),
            "b3": lambda: case(lambda: blake3_pass(files)),
            "b3 threads": lambda: case(lambda: blake3_threaded(files)),
        },
        args.rounds,
        order="mirror",
    )
    rows = [
        [n, f"{command:.2f}", f"{job:.2f}", f"{cpu:.1f}", f"{one:.2f}", f"{many:.2f}",
         f"{len(files) / job:.0f}", h.ratio(one, command), h.ratio(one, job),
         h.ratio(many, job), " | ".join(loads[3 * (n - 1) : 3 * n])]
        for n, ((command, job, cpu), one, many)
        in enumerate(zip(runs["verify"], runs["b3"], runs["b3 threads"], strict=True), 1)
    ]  # fmt: skip
    h.table(["round", "command s", "job s", "command CPU s", "b3 s", "b3 threads s",
             "job files/s", "b3 / command", "b3 / job", "b3 threads / job",
             "load after each"], rows)  # fmt: skip
    commands = [v[0] for v in runs["verify"]]
    jobs = [v[1] for v in runs["verify"]]
    h.figure("job files/s", statistics.median(len(files) / j for j in jobs))
    by_command = h.median_ratio(zip(runs["b3"], commands, strict=True), name="b3 / command")
    by_job = h.median_ratio(zip(runs["b3"], jobs, strict=True), name="b3 / job")
    threaded = h.median_ratio(zip(runs["b3 threads"], jobs, strict=True), name="b3 threads / job")
    h.note(
        f"median of each round's ratio (baseline / verify): b3 / command {by_command:.2f}x, "
        f"b3 / job {by_job:.2f}x, b3 threads / job {threaded:.2f}x"
    )
    if not args.keep:
        shutil.rmtree(home)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cold", action="store_true", help="drop the files' pages each case")
    parser.add_argument("--keep", action="store_true", help="keep the library (profiling)")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
