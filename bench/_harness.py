"""What every benchmark shares: how it runs, measures and reports.

A bench is a script ``bench/NAME.py`` whose ``main`` hands ``run`` its parser and its
body; it then runs as ``python -m bench.NAME [options] [--json]`` and gets:

* the load average before and after, the CPU count and how long the run took;
* ``--json``: the human report (headings, notes, tables) goes to stderr, and one JSON
  document to stdout: the bench, its arguments, the load averages, every table (raw
  values) and every figure named through ``figure`` or ``ratio(..., name=)``;
* ``alternate``: rounds in which each case (the measured command, its baseline) runs
  in turn, A B A B … or A B B A …, so that a drift of this shared machine's load hits
  them alike; ``median_ratio`` of the rounds' pairs, ``best``;
* measures: ``timed`` (wall and CPU seconds of a call), ``cpu_seconds``,
  ``peak_rss_mb`` (VmHWM), ``run_command`` (wall, CPU and peak RSS of a command);
* children: ``run_json`` runs a measurement in a fresh interpreter (its own imports and
  peak memory), ``--child ARGS`` reaches the bench's ``child`` function there;
* ``spawn_pool`` / ``start_pool``: process pools started before the clock starts.

Figures are ratios against a baseline measured in the same run, never absolute
timings checked against a limit.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from importlib import metadata
from multiprocessing import get_context
from pathlib import Path
from typing import Any, Literal, NamedTuple, TypeVar

REPO = Path(__file__).resolve().parent.parent
K = TypeVar("K")
T = TypeVar("T")


# ── the report: printed, and kept for --json ───────────────────────────────────
@dataclass
class Section:
    title: str
    notes: list[str] = field(default_factory=list)
    tables: list[dict[str, Any]] = field(default_factory=list)
    figures: dict[str, Any] = field(default_factory=dict)


SECTIONS: list[Section] = [Section("")]


def heading(title: str) -> None:
    SECTIONS.append(Section(title))
    print(f"\n{title}\n{'─' * len(title)}", flush=True)


def note(message: str, indent: int = 2) -> None:
    SECTIONS[-1].notes.append(message)
    prefix = " " * indent
    print(textwrap.fill(message, 100, initial_indent=prefix, subsequent_indent=prefix + "  "))
    sys.stdout.flush()


def table(headers: list[str], rows: list[list[Any]]) -> None:
    SECTIONS[-1].tables.append({"headers": headers, "rows": rows})
    cells = [headers, *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right = [i > 0 and all(_numeric(row[i]) for row in rows) for i in range(len(headers))]
    for n, row in enumerate(cells):
        pairs = zip(row, widths, right, strict=True)
        line = "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in pairs)
        print(f"  {line}".rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    sys.stdout.flush()


def _numeric(value: Any) -> bool:
    """Numbers, ratios ("1.2x") and blanks are right-aligned."""
    return isinstance(value, int | float) or value == "" or str(value)[:1].isdigit()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def figure(name: str, value: Any) -> Any:
    """Keep ``value`` under ``name`` in the JSON report (the current section)."""
    SECTIONS[-1].figures[name] = value
    return value


def ratio(a: float, b: float, *, name: str | None = None) -> str:
    """``a / b`` as text ("1.23x"); kept in the JSON report when named."""
    if not b:
        return "n/a"
    if name is not None:
        figure(name, a / b)
    return f"{a / b:.2f}x"


def median_ratio(pairs: Iterable[tuple[float, float]], *, name: str | None = None) -> float:
    """The median of a/b over rounds: each round's two numbers were measured close
    together, so the machine's noise partly cancels."""
    value = statistics.median(a / b for a, b in pairs)
    return value if name is None else figure(name, value)


# ── rounds ─────────────────────────────────────────────────────────────────────
def alternate(
    cases: Mapping[K, Callable[[], T]],
    rounds: int,
    *,
    order: Literal["same", "mirror", "rotate"] = "same",
    warmup: int = 0,
    once: Collection[K] = (),
    enough: Callable[[dict[K, list[T]]], bool] | None = None,
) -> dict[K, list[T]]:
    """Run every case once a round, in turns, and return each one's results by round.

    The order of a round is the cases' own (``same``: A B, A B …), reversed every
    other round (``mirror``: A B, B A …: each runs first as often as last), or turned
    by one each round (``rotate``: A B C, B C A …). ``warmup`` rounds run first and are
    not kept; a case in ``once`` runs in the first round only (a slow baseline that
    only needs beating); ``enough`` (given the results so far) may end the rounds early.
    """
    keys = list(cases)
    results: dict[K, list[T]] = {key: [] for key in keys}
    for n in range(warmup + rounds):
        if n >= warmup and enough is not None and enough(results):
            break
        turn = keys
        if order == "mirror" and n % 2:
            turn = keys[::-1]
        elif order == "rotate":
            turn = keys[n % len(keys) :] + keys[: n % len(keys)]
        for key in turn:
            if key in once and n > warmup:
                continue
            value = cases[key]()
            if n >= warmup:
                results[key].append(value)
    return results


def best(results: Iterable[T], key: Callable[[T], float]) -> T:
    """The round with the highest ``key`` (e.g. a rate): the least disturbed one."""
    return max(results, key=key)


# ── measures ───────────────────────────────────────────────────────────────────
class Timing(NamedTuple):
    wall: float
    cpu: float  # this process, all threads


def timed(call: Callable[[], Any]) -> Timing:
    wall, cpu = time.perf_counter(), time.process_time()
    call()
    return Timing(time.perf_counter() - wall, time.process_time() - cpu)


def cpu_seconds() -> float:
    """CPU time (user + system) of this process (all threads) and of its children that
    have been waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_kb() -> int:
    """VmHWM: this process's own peak RSS in KiB (ru_maxrss also counts, after an exec,
    the memory of the parent that forked it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def peak_rss_mb() -> float:
    return peak_rss_kb() / 1024


@dataclass(frozen=True)
class Finished:
    wall: float
    cpu: float  # user + system of the command's process tree (wait4)
    rss_mb: float  # its largest process's ru_maxrss
    stdout: str


def run_command(args: list[str], env: Mapping[str, str] | None = None) -> Finished:
    """Run ``args`` to its end; it must succeed."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        child.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if child.returncode != 0:
            raise RuntimeError(f"{' '.join(args)} exited {child.returncode}:\n{err.read()[-3000:]}")
        output = out.read()
    return Finished(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, output)


# ── children ───────────────────────────────────────────────────────────────────
def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with this checkout first on ``PYTHONPATH`` (its
    ``src`` and its root, for ``bench.*`` and ``tests.*``), also when the benchmark
    runs from another checkout (an old commit's worktree, for a before/after)."""
    paths = [str(REPO / "src"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


def run_json(
    args: list[str],
    what: str,
    *,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """Run ``python *args`` (from the checkout's root) and return the JSON of its last
    output line."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=child_env() if env is None else env,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def in_child(bench: str, *args: str, timeout: float | None = None) -> dict[str, Any]:
    """``python -m bench.BENCH --child ARGS``: the bench's ``child`` in a fresh process."""
    return run_json(["-m", f"bench.{bench}", "--child", *args], f"child {args}", timeout=timeout)


def print_result(result: Mapping[str, Any]) -> None:
    """A child's result, as its last output line (what ``run_json`` reads)."""
    print(json.dumps(result, default=str), flush=True)


# ── process pools ──────────────────────────────────────────────────────────────
def spawn_pool(size: int) -> ProcessPoolExecutor:
    """A pool like the worker's: spawned processes (forking a threaded process is unsafe)."""
    return ProcessPoolExecutor(size, mp_context=get_context("spawn"))


def pid_after(seconds: float) -> int:
    """Sleep, then name the process: with every process busy a moment, each of a fresh
    pool's processes takes one."""
    time.sleep(seconds)
    return os.getpid()


def start_pool(
    pool: ProcessPoolExecutor,
    size: int,
    delay: float = 0.05,
    task: Callable[[float], int] = pid_after,
) -> float:
    """Return once every process of ``pool`` has run ``task(delay)`` (spawned, its
    imports done); returns the seconds it took."""
    started = time.perf_counter()
    pids: set[int] = set()
    while len(pids) < size:
        pids.update(pool.map(task, [delay] * size))
    return time.perf_counter() - started


# ── the run ────────────────────────────────────────────────────────────────────
def versions(*names: str) -> str:
    """Installed versions of ``names`` (distributions), for a report's header."""
    found = []
    for name in names:
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def parser(doc: str | None) -> argparse.ArgumentParser:
    """A parser described by the first paragraph of the bench's docstring."""
    return argparse.ArgumentParser(description=(doc or "").split("\n\n")[0])


@contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    """File descriptor 1 onto 2, so that child processes' output stays off stdout too."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def _load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def run(
    options: argparse.ArgumentParser,
    body: Callable[[argparse.Namespace], int | None],
    argv: list[str] | None = None,
    *,
    child: Callable[[list[str]], Mapping[str, Any]] | None = None,
) -> int:
    """Parse the options (with ``--json``, and ``--child`` when the bench has a child
    side), run ``body`` between two load averages, print the JSON report if asked."""
    options.add_argument(
        "--json", action="store_true", help="the report on stderr, its figures as JSON on stdout"
    )
    if child is not None:
        options.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = options.parse_args(argv)
    if child is not None and args.child:
        print_result(child(args.child))
        return 0
    main_spec = getattr(sys.modules["__main__"], "__spec__", None)
    name = main_spec.name if main_spec is not None else options.prog
    started, load_before = time.perf_counter(), os.getloadavg()
    with _stdout_to_stderr() if args.json else nullcontext():
        print(f"{name}: {os.cpu_count()} CPUs, Python {platform.python_version()}; "
              f"load average {_load()} (1 / 5 / 15 min) before", flush=True)  # fmt: skip
        code = body(args) or 0
        seconds = time.perf_counter() - started
        print(f"\nload average {_load()} after; done in {seconds:.0f} s", flush=True)
    if args.json:
        document = {
            "bench": name,
            "argv": sys.argv[1:] if argv is None else argv,
            "cpus": os.cpu_count(),
            "load_before": load_before,
            "load_after": os.getloadavg(),
            "seconds": seconds,
            "exit": code,
            "sections": [vars(s) for s in SECTIONS if s.title or s.notes or s.tables or s.figures],
        }
        print(json.dumps(document, default=str, indent=1))
    return code
