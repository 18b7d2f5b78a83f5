"""Start-up time of the commands that only read the library (issue #17.5: `--help`
and `jobs` in < 0.3 s; #32: sources, assets, search and people too).

Run with ``.venv/bin/python -m bench.startup [--runs N]``. It makes a library in a
temporary home (``init``, then ``import`` of a few generated photos without
``--wait``: three queued jobs to list and show) and runs each command ``--runs``
times (default 9) in a fresh interpreter, the commands in turns, printing the median
wall and CPU seconds (user + system, from ``wait4``) of each. Two floors are timed in
the same run, so the figures can be read on a busy machine: the bare interpreter, and
one that only imports what every library command needs (Typer, Rich, SQLAlchemy's ORM
and its SQLite dialect). Each command's CPU time is also given against that floor.

Which modules a command loads is asserted in tests/unit/cli/test_cli_startup.py; this
script only measures.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
from argparse import Namespace
from pathlib import Path

from bench import _harness as h

CLI = [sys.executable, "-m", "photo_pipeline"]
TARGET_SECONDS = 0.3
FLOOR = "import typer, rich.console, sqlalchemy.orm, sqlalchemy.dialects.sqlite.pysqlite"
ORM_FLOOR = "typer + rich + SQLAlchemy ORM (floor)"


def make_library(home: Path, env: dict[str, str]) -> str:
    """A library with a few queued jobs; returns one job's id."""
    photos = home.parent / "photos"
    run = {"env": env, "check": True, "capture_output": True, "text": True}
    subprocess.run([*CLI, "sample", str(photos), "--count", "3"], **run)  # type: ignore[call-overload]
    done = subprocess.run([*CLI, "import", str(photos), "--json"], **run)  # type: ignore[call-overload]
    return str(json.loads(done.stdout)[0]["id"])


def body(args: Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="pp-startup-") as scratch:
        home = Path(scratch) / "home"
        env = {**os.environ, "PHOTO_PIPELINE_HOME": str(home)}
        env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
        job_id = make_library(home, env)
        commands = {
            "python -c pass (floor)": [sys.executable, "-c", "pass"],
            ORM_FLOOR: [sys.executable, "-c", FLOOR],
            "--help": [*CLI, "--help"],
            "jobs --json": [*CLI, "jobs", "--json"],
            "jobs": [*CLI, "jobs"],
            "job show ID": [*CLI, "job", "show", job_id],
            "job show ID --json": [*CLI, "job", "show", job_id, "--json"],
            "sources": [*CLI, "sources"],
            "assets": [*CLI, "assets"],
            "search paris": [*CLI, "search", "paris"],
            "people list": [*CLI, "people", "list"],
        }
        h.heading(f"start-up: median of {args.runs} runs, a library of 3 queued jobs")
        # One unmeasured run each first: the page cache, and the bytecode when it may
        # be written.
        runs = h.alternate(
            {label: lambda a=argv: h.run_command(a, env) for label, argv in commands.items()},
            args.runs,
            warmup=1,
        )
    medians = {
        label: (statistics.median(r.wall for r in done), statistics.median(r.cpu for r in done))
        for label, done in runs.items()
    }
    floor_cpu = medians[ORM_FLOOR][1]
    rows = [
        [label, f"{wall:.3f}", f"{cpu:.3f}", h.ratio(cpu, floor_cpu, name=f"{label} CPU / floor"),
         "" if "floor" in label else ("yes" if wall < TARGET_SECONDS else "NO")]
        for label, (wall, cpu) in medians.items()
    ]  # fmt: skip
    h.table(["command", "wall s", "CPU s", "CPU / ORM floor", f"< {TARGET_SECONDS} s"], rows)
    h.note(
        f"PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', 'unset')} "
        "(when set, the project's own modules are compiled at every start). Wall time "
        "is what a user waits for; CPU time is the steadier figure on a shared machine."
    )


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--runs", type=int, default=9, help="runs of each command (default 9)")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
