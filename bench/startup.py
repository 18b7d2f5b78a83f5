"""Start-up time of the commands that only read the library (issue #17.5: `--help`
and `jobs` in < 0.3 s).

Run with ``.venv/bin/python -m bench.startup [--runs N]``. It makes a library in a
temporary home (``init``, then ``import`` of a few generated photos without
``--wait``: three queued jobs to list and show) and runs each command ``--runs``
times (default 9) in a fresh interpreter, printing the median wall and CPU seconds
(user + system, from ``wait4``) of each. Two floors are timed in the same run, so the
figures can be read on a busy machine: the bare interpreter, and one that only
imports what every library command needs (Typer, Rich, SQLAlchemy's ORM and its
SQLite dialect). Each command's CPU time is also given against that floor.

Which modules a command loads is asserted in tests/unit/cli/test_cli_startup.py; this
script only measures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._report import heading, note, table

CLI = [sys.executable, "-m", "photo_pipeline"]
TARGET_SECONDS = 0.3
FLOOR = "import typer, rich.console, sqlalchemy.orm, sqlalchemy.dialects.sqlite.pysqlite"


def timed(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one run of ``args``, which must succeed."""
    started = time.perf_counter()
    child = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if os.waitstatus_to_exitcode(status) != 0:
        assert child.stderr is not None
        raise RuntimeError(f"{' '.join(args)} failed: {child.stderr.read().decode()[-2000:]}")
    assert child.stderr is not None
    child.stderr.close()
    return seconds, usage.ru_utime + usage.ru_stime


def medians(args: list[str], env: dict[str, str], runs: int) -> tuple[float, float]:
    """Median wall and CPU seconds over ``runs`` runs, after one unmeasured run (the
    page cache, and the bytecode when it may be written)."""
    timed(args, env)
    samples = [timed(args, env) for _ in range(runs)]
    return (
        statistics.median(wall for wall, _ in samples),
        statistics.median(cpu for _, cpu in samples),
    )


def make_library(home: Path, env: dict[str, str]) -> str:
    """A library with a few queued jobs; returns one job's id."""
    photos = home.parent / "photos"
    run = {"env": env, "check": True, "capture_output": True, "text": True}
    subprocess.run([*CLI, "sample", str(photos), "--count", "3"], **run)  # type: ignore[call-overload]
    done = subprocess.run([*CLI, "import", str(photos), "--json"], **run)  # type: ignore[call-overload]
    return str(json.loads(done.stdout)[0]["id"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (default 9)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="pp-startup-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "PHOTO_PIPELINE_HOME": str(home)}
        env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
        job_id = make_library(home, env)
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            "typer + rich + SQLAlchemy ORM (floor)": [sys.executable, "-c", FLOOR],
            "--help": [*CLI, "--help"],
            "jobs --json": [*CLI, "jobs", "--json"],
            "jobs": [*CLI, "jobs"],
            "job show ID": [*CLI, "job", "show", job_id],
            "job show ID --json": [*CLI, "job", "show", job_id, "--json"],
        }
        heading(f"start-up: median of {args.runs} runs, a library of 3 queued jobs")
        results = {label: medians(argv, env, args.runs) for label, argv in commands.items()}
    floor_cpu = results["typer + rich + SQLAlchemy ORM (floor)"][1]
    rows = [
        [
            label,
            f"{wall:.3f}",
            f"{cpu:.3f}",
            f"{cpu / floor_cpu:.2f}x",
            "" if "floor" in label else ("yes" if wall < TARGET_SECONDS else "NO"),
        ]
        for label, (wall, cpu) in results.items()
    ]
    table(["command", "wall s", "CPU s", "CPU / ORM floor", f"< {TARGET_SECONDS} s"], rows)
    note(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}; "
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')} "
        "(when set, the project's own modules are compiled at every start). Wall time "
        "is what a user waits for; CPU time is the steadier figure on a shared machine."
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
