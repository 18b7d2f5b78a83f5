"""Benchmark ``photo-pipeline import DIR --wait`` as a user runs it against the floor
(issue #32.1).

Run with ``.venv/bin/python -m bench.import_command [--photos 48,500] [--rounds 3]``.
For each photo set (24-MP JPEGs from ``bench.import``, made once and reused) it runs,
every round, in turns (A B, B A, …: each side first as often as last):

* the command: ``photo-pipeline import DIR --wait --json`` in a process of its own,
  on an empty library (``init`` before, not timed), its whole wall time: start-up,
  the embedded worker, scan → render → similar, the wait, the exit;
* the floor: ``python -m bench._import_loops jpeg DIR``, the bare two-process loop of
  the same essential work (read + BLAKE3, EXIF, one shrink-on-load decode, a 1440-px
  JPEG and a 256-px WebP) as a process of its own; its pool's start is reported apart.

It prints the medians and min–max over the rounds of photos/s and of each round's
ratio (the command against the floor measured just before or after it): against the
floor's whole process (a command against a command: the target, >= 0.85 on 48
photos, >= 0.90 on 500) and against its loop alone (its interpreter and pool start
not counted, the stricter figure). Where the command's time went comes from its
jobs' rows: start-up (process start to the scan's enqueue), the worker's pick-up,
each job, and the tail (the last job's end to the process's exit). The load average
is printed with every round: on this shared machine only ratios within a run count.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from argparse import Namespace
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import _harness as h

CLI = Path(sys.executable).parent / "photo-pipeline"
TARGETS = {48: 0.85, 500: 0.90}


def _import_bench() -> Any:
    import importlib

    return importlib.import_module("bench.import")  # `import` is a keyword


def floor(folder: Path) -> dict[str, float]:
    """The bare loop as a process: its wall seconds, its pool's start and its loop."""
    done = h.run_command(
        [sys.executable, "-m", "bench._import_loops", "jpeg", str(folder)], h.child_env()
    )
    inner = json.loads(done.stdout.strip().splitlines()[-1])
    return {"wall": done.wall, "cpu": done.cpu, "start": inner["start"], "loop": inner["loop"]}


def command(folder: Path) -> dict[str, Any]:
    """``photo-pipeline import FOLDER --wait --json`` on an empty library: its wall
    and CPU seconds, and where the time went by its jobs' timestamps."""
    with tempfile.TemporaryDirectory(prefix="pp-import-command-") as home:
        env = {**h.child_env(), "PHOTO_PIPELINE_HOME": home}
        env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
        h.run_command([str(CLI), "init"], env)
        began = time.time()
        done = h.run_command([str(CLI), "import", str(folder), "--wait", "--json"], env)
        ended = began + done.wall
    jobs = json.loads(done.stdout)
    bad = [(job["job_type"], job["state"]) for job in jobs if job["state"] != "succeeded"]
    if bad:
        raise RuntimeError(f"photo-pipeline import: {bad}")

    def at(job: dict[str, Any], field: str) -> float:
        return datetime.fromisoformat(job[field]).timestamp()

    first, last = jobs[0], jobs[-1]
    spans = {
        "start-up": at(first, "created_at") - began,
        "pick-up": at(first, "started_at") - at(first, "created_at"),
        **{job["job_type"]: at(job, "finished_at") - at(job, "started_at") for job in jobs},
        "tail": ended - at(last, "finished_at"),
    }
    return {"wall": done.wall, "cpu": done.cpu, "rss_mb": done.rss_mb, "spans": spans}


def spread(values: list[float], fmt: str = ".2f") -> str:
    """``median (min–max)``."""
    return (
        f"{statistics.median(values):{fmt}} ({min(values):{fmt}}–{max(values):{fmt}})"
        if len(values) > 1
        else f"{values[0]:{fmt}}"
    )


def load() -> str:
    return " / ".join(f"{v:.1f}" for v in os.getloadavg())


def measure(count: int, rounds: int) -> list[Any]:
    """``rounds`` alternated rounds on ``count`` photos; prints them, returns the
    summary row."""
    folder = _import_bench().photo_set("jpeg", count)
    h.heading(f"{count} photos: {rounds} rounds, the command and the floor in turns")
    loads: list[str] = []

    def with_load(call: Any) -> Any:
        result = call()
        loads.append(load())
        return result

    runs = h.alternate(
        {
            "floor": lambda: with_load(lambda: floor(folder)),
            "command": lambda: with_load(lambda: command(folder)),
        },
        rounds,
        order="mirror",
    )
    floors, commands = runs["floor"], runs["command"]
    rows = []
    for n, (bare, ours) in enumerate(zip(floors, commands, strict=True)):
        rows.append([
            n + 1, count / ours["wall"], count / bare["wall"], count / bare["loop"],
            f"{bare['wall'] / ours['wall']:.2f}x", f"{bare['loop'] / ours['wall']:.2f}x",
            f"{ours['cpu']:.1f} / {bare['cpu']:.1f}",
            " ".join(f"{k} {v:.2f}" for k, v in ours["spans"].items()),
            f"{loads[2 * n]} | {loads[2 * n + 1]}",
        ])  # fmt: skip
    h.table(
        ["round", "command photos/s", "floor photos/s", "floor loop photos/s",
         "vs floor", "vs loop", "CPU s (cmd / floor)", "command's seconds",
         "load after each (1/5/15 min)"],
        rows,
    )  # fmt: skip
    vs_floor = [b["wall"] / o["wall"] for b, o in zip(floors, commands, strict=True)]
    vs_loop = [b["loop"] / o["wall"] for b, o in zip(floors, commands, strict=True)]
    h.figure(f"{count} photos: command / floor (median)", statistics.median(vs_floor))
    h.figure(f"{count} photos: command / floor loop (median)", statistics.median(vs_loop))
    target = TARGETS.get(count)
    met = "" if target is None else ("yes" if statistics.median(vs_floor) >= target else "NO")
    spans = {key: [run["spans"][key] for run in commands] for key in commands[0]["spans"]}
    h.note(
        "the command's seconds, median (min–max): "
        + ", ".join(f"{key} {spread(values)}" for key, values in spans.items())
    )
    h.note(
        f"the floor's pool start, median {spread([b['start'] for b in floors])} s "
        "(in its whole process's time, not in its loop's)"
    )
    return [
        count,
        spread([count / run["wall"] for run in commands]),
        spread([count / run["wall"] for run in floors]),
        spread([count / run["loop"] for run in floors]),
        spread(vs_floor),
        spread(vs_loop),
        spread([b["cpu"] / o["cpu"] for b, o in zip(floors, commands, strict=True)]),
        "" if target is None else f">= {target:.2f}",
        met,
        spread([run["rss_mb"] for run in commands], ".0f"),
    ]


def body(args: Namespace) -> int:
    if not CLI.exists():
        print(f"no {CLI}: install the project into this interpreter's environment")
        return 2
    if args.vips_concurrency:
        # As in bench.import: one busy thread per item, like each bare process.
        os.environ["VIPS_CONCURRENCY"] = str(args.vips_concurrency)
    h.note(f"VIPS_CONCURRENCY={os.environ.get('VIPS_CONCURRENCY', 'unset')}")
    counts = [int(n) for n in args.photos.split(",") if n.strip()]
    rows = [measure(count, args.rounds) for count in counts]
    h.heading("summary: medians (min–max) of the rounds")
    h.table(
        ["photos", "command photos/s", "floor photos/s", "floor loop photos/s",
         "command / floor", "command / loop", "CPU: floor / command", "target", "met",
         "peak RSS MB"],
        rows,
    )  # fmt: skip
    h.note(
        "command / floor: each round's command against that round's floor, both whole "
        "processes (the target); command / loop: against the floor's loop alone; CPU: the "
        "floor's CPU seconds (its process tree) over the command's, the figure a loaded "
        "machine sways least (a side with more busy threads gets more of a loaded "
        "machine's cores, which moves the wall ratios)"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument(
        "--photos", default="48,500", help="comma-separated set sizes (default 48,500)"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds per set (default 3)")
    parser.add_argument(
        "--vips-concurrency",
        type=int,
        default=1,
        help="VIPS_CONCURRENCY of both sides' processes (default 1; 0: libvips' own)",
    )
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
