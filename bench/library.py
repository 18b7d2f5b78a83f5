"""A real-sized run (issue #32.4): a generated library of a realistic mix imported,
organized with ``--move``, verified and deduped end to end by the real commands, each
phase's rate against its bare floor, peak RSS, and a check that nothing is lost.

Run with ``.venv/bin/python -m bench.library [--files 10000] [--cache DIR] [--seed 1]``.

0. The set (``bench._library_set``: 2–24 MP JPEGs, HEICs, PNG screenshots, short
   videos, a few DNGs, 6% exact duplicates in other folders, 3% near copies, 3% broken),
   made once into ``--cache`` (default /tmp/pp_bench_library) and reused; each run
   copies it into a work folder beside it (``cp -r``, not timed), since ``--move``
   takes the files away.
1. The phases, as a user runs them, each a command of its own
   (``photo-pipeline …`` with ``PHOTO_PIPELINE_HOME`` a fresh library on SQLite), each
   right after its floor (``bench._library_floors``), ``os.sync()`` before each:
   - import: ``import SRC --wait --json`` against the bare two-process loop of the
     same essential work on the same files, as a process of its own;
   - organize: ``organize --dest DEST --move --wait --json`` against a bare move
     (read + BLAKE3, hard link, fsync, unlink, fsync: per file) of a copy of the
     same tree;
   - verify: ``verify --wait --json`` against one BLAKE3 pass over the organized bytes;
   - dedupe: ``dedupe --dry-run --json`` then ``dedupe --wait --json`` (no floor).
2. The checks (the run fails if one does not hold): the broken files are catalogued
   as failed (none as an asset) and still on disk; after organize every other content
   is in the destination exactly once; after dedupe each content is at one place
   (destination or source) and every generated file is somewhere (destination,
   source, quarantine) with its bytes: the multiset of hashes is the generated one.
3. One table: per phase its files, seconds, files/s, the floor's files/s, the ratio
   (command / floor, 1.00: as fast as the floor), the peak RSS of its process tree
   (the largest sum of the tree's RSS, sampled every 0.1 s from /proc) and of its
   largest single process (wait4's ru_maxrss), the CPU seconds of the command and of
   its floor (their ratio is what the load sways least: on a loaded machine the side
   with more busy threads wins more wall time), with the load average after it. The
   import is shown a second time without its ``faces`` job's run, which the floor
   (issue #32.1's essential work) does not do.

Run it at two sizes and compare the rates and the RSS: what grows with the library
is what slows down per file or weighs more. Only ratios within one run count on this
shared machine.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from argparse import Namespace
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import blake3

from bench import _harness as h
from bench import _library_floors as floors
from bench import _library_set as library_set

CLI = Path(sys.executable).parent / "photo-pipeline"
CACHE = Path(tempfile.gettempdir()) / "pp_bench_library"
RSS_TARGET_MB = 400
SAMPLE_SECONDS = 0.1


# ── measuring a command ────────────────────────────────────────────────────────
def _tree_rss_kb(root: int) -> dict[int, tuple[str, int]]:
    """RSS in KiB and a short name of ``root`` and each of its descendants (/proc)."""
    parents: dict[int, int] = {}
    seen: dict[int, tuple[str, int]] = {}
    page_kb = os.sysconf("SC_PAGESIZE") // 1024
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as stat:
                tail = stat.read().rsplit(")", 1)[1]
            with open(f"/proc/{entry}/cmdline", "rb") as cmdline:
                words = cmdline.read().split(b"\0")
        except OSError:
            continue
        fields = tail.split()
        parents[int(entry)] = int(fields[1])
        seen[int(entry)] = (_process_name(words), int(fields[21]) * page_kb)
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        children = [p for p, parent in parents.items() if parent == pid and p not in tree]
        tree.update(children)
        frontier.extend(children)
    return {pid: seen[pid] for pid in tree if pid in seen}


def _process_name(words: list[bytes]) -> str:
    """``photo-pipeline import``, ``multiprocessing spawn``, …: enough to tell them apart."""
    text = [w.decode(errors="replace") for w in words if w]
    if any("multiprocessing" in w for w in text):
        return "pool process"
    return " ".join(os.path.basename(w) for w in text[:2]) or "?"


@dataclass(frozen=True)
class Ran:
    wall: float
    cpu: float
    exit: int
    tree_mb: float  # peak of the process tree's summed RSS (sampled)
    at_peak: str  # its processes then, largest first
    largest_mb: float  # the largest single process's peak (ru_maxrss)
    stdout: str
    stderr: str


def run(args: list[str], env: dict[str, str], ok: tuple[int, ...] = (0,)) -> Ran:
    """Run ``args`` to its end, sampling its tree's RSS; its exit must be in ``ok``."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.perf_counter()
        child = subprocess.Popen(args, stdout=out, stderr=err, env=env, cwd=h.REPO)
        peak: list[Any] = [0, {}]
        done = threading.Event()

        def sample() -> None:
            while not done.wait(SAMPLE_SECONDS):
                tree = _tree_rss_kb(child.pid)
                total = sum(rss for _, rss in tree.values())
                if total > peak[0]:
                    peak[:] = [total, tree]

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        sampler.join()
        code = os.waitstatus_to_exitcode(status)
        child.returncode = code
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if code not in ok:
        raise RuntimeError(f"{' '.join(args)} exited {code}:\n{stderr[-3000:]}")
    cpu = usage.ru_utime + usage.ru_stime
    at_peak = ", ".join(
        f"{name} {rss / 1024:.0f}" for name, rss in sorted(peak[1].values(), key=lambda v: -v[1])
    )
    return Ran(wall, cpu, code, peak[0] / 1024, at_peak, usage.ru_maxrss / 1024, stdout, stderr)


def timed(call: Any) -> tuple[float, Any]:
    started = time.perf_counter()
    result = call()
    return time.perf_counter() - started, result


def cpu_timed(call: Any) -> tuple[float, float, Any]:
    """Wall and CPU seconds (this process's threads) of ``call``, and its result."""
    cpu = h.cpu_seconds()
    wall, result = timed(call)
    return wall, h.cpu_seconds() - cpu, result


# ── what is on disk ────────────────────────────────────────────────────────────
def hashes_below(folder: Path) -> Counter[str]:
    """The BLAKE3 of every file below ``folder`` (hidden names included: nothing may
    hide there), counted."""
    found: Counter[str] = Counter()
    if not folder.exists():
        return found
    for path in folder.rglob("*"):
        if path.is_file():
            found[blake3.blake3(path.read_bytes()).hexdigest()] += 1
    return found


def catalogue(home: Path) -> dict[str, list[tuple[str, str | None]]]:
    """The library's files by state: (path, error code)."""
    db = sqlite3.connect(f"file:{home / 'library.sqlite3'}?mode=ro", uri=True)
    try:
        rows = db.execute("select path, state, error_code from files").fetchall()
    finally:
        db.close()
    states: dict[str, list[tuple[str, str | None]]] = {}
    for path, state, code in rows:
        states.setdefault(state, []).append((path, code))
    return states


def check(condition: bool, message: str) -> None:
    if not condition:
        raise SystemExit(f"LOST OR WRONG: {message}")


# ── the run ────────────────────────────────────────────────────────────────────
@dataclass
class Phase:
    name: str
    files: int
    ran: Ran
    floor_seconds: float | None = None
    load: str = ""
    left_out: float = 0.0  # seconds of the command not counted (a job the floor lacks)
    floor_cpu: float | None = None  # CPU seconds of the floor (user + system)

    @property
    def seconds(self) -> float:
        return self.ran.wall - self.left_out


def load() -> str:
    return " / ".join(f"{v:.2f}" for v in os.getloadavg())


def job_seconds(job: dict[str, Any]) -> float:
    """A job's run time (claim to finish) from its row."""
    if not (job.get("started_at") and job.get("finished_at")):
        return 0.0
    ended = datetime.fromisoformat(job["finished_at"])
    return (ended - datetime.fromisoformat(job["started_at"])).total_seconds()


def spans(jobs: list[dict[str, Any]]) -> str:
    return ", ".join(f"{job['job_type']} {job_seconds(job):.1f} s" for job in jobs)


def body(args: Namespace) -> int:
    if not CLI.exists():
        print(f"no {CLI}: install the project into this interpreter's environment")
        return 2
    cache = Path(args.cache)
    h.heading(f"the set: {args.files} files, seed {args.seed}")
    made, the_set = timed(lambda: library_set.make(cache, args.files, args.seed))
    entries = the_set.entries
    kinds = Counter(f"{e.role} {e.kind}" if e.role != "original" else e.kind for e in entries)
    h.note(
        f"{len(entries)} files, {the_set.total_bytes / 1e6:,.0f} MB in {the_set.root} "
        f"({made:.0f} s to make or load): "
        + ", ".join(f"{n} {kind}" for kind, n in sorted(kinds.items()))
    )
    broken = {e.relative for e in entries if e.role == "broken"}
    wanted = Counter(e.blake3 for e in entries)
    contents = {e.blake3 for e in entries if e.role != "broken"}

    work = cache / f"run-{args.files}-seed{args.seed}"
    shutil.rmtree(work, ignore_errors=True)
    source, dest, home = work / "source", work / "organized", work / "home"
    work.mkdir(parents=True)
    subprocess.run(["cp", "-r", str(the_set.root), str(source)], check=True)
    home.mkdir()
    env = {**h.child_env(), "PHOTO_PIPELINE_HOME": str(home)}
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
    run([str(CLI), "init"], env)
    phases: list[Phase] = []
    n = len(entries)

    # import
    os.sync()
    bare = run([sys.executable, "-m", "bench._library_floors", str(source)], h.child_env())
    os.sync()
    # Exit 5: some items failed (the broken files), which the checks below expect.
    ran = run([str(CLI), "import", str(source), "--wait", "--json"], env, ok=(0, 5))
    phases.append(Phase("import", n, ran, bare.wall, load(), floor_cpu=bare.cpu))
    jobs = json.loads(ran.stdout)
    inner = json.loads(bare.stdout.strip().splitlines()[-1])
    h.note(
        f"import floor: pool start {inner['start']:.1f} s, loop {inner['loop']:.1f} s, CPU s by "
        "suffix: " + ", ".join(f"{k} {v:.1f}" for k, v in sorted(inner["cpu_by_suffix"].items()))
    )
    h.note(f"import's jobs: {spans(jobs)}; states {[j['state'] for j in jobs]}")
    # The floor has no face detection (issue #32.1's essential work): the command
    # without its faces job's run is the like-for-like figure.
    faces = sum(job_seconds(j) for j in jobs if j["job_type"] == "faces")
    if faces:
        phases.append(Phase("import, faces job left out", n, ran, bare.wall, load(), faces))
    states = catalogue(home)
    failed = {path for path, _ in states.get("failed", [])}
    check(failed == broken, f"failed files {sorted(failed ^ broken)[:10]} differ from the broken")
    check(
        len(states.get("present", [])) == n - len(broken),
        f"{len(states.get('present', []))} present files, {n - len(broken)} expected",
    )
    codes = Counter(code for _, code in states["failed"])
    h.note(f"broken files catalogued as failed: {dict(codes)}")

    # organize --move
    floor_source, floor_dest = work / "floor-source", work / "floor-dest"
    subprocess.run(["cp", "-r", str(source), str(floor_source)], check=True)
    os.sync()
    moved_seconds, moved_cpu, moved = cpu_timed(lambda: floors.move(floor_source, floor_dest))
    shutil.rmtree(floor_source)
    shutil.rmtree(floor_dest)
    os.sync()
    ran = run(
        [str(CLI), "organize", "--dest", str(dest), "--move", "--wait", "--json"], env, ok=(0, 5)
    )
    result = json.loads(ran.stdout)
    report = result["report"]
    # The floor moved every file of the source (the broken ones too): per file, scaled.
    share = (n - len(broken)) / moved
    phases.append(
        Phase("organize --move", n - len(broken), ran, moved_seconds * share, load(),
              floor_cpu=moved_cpu * share)
    )  # fmt: skip
    reasons = Counter(p["reason"] for p in report["problems"])
    h.note(
        f"organize: {report['states']}, problems by reason {dict(reasons)}; its job ran "
        f"{job_seconds(result['job']):.1f} s of the command's {ran.wall:.1f} s"
    )
    organized = hashes_below(dest)
    check(set(organized) == contents, f"{len(contents - set(organized))} contents not organized")
    check(max(organized.values()) == 1, "a content placed twice")
    # (its problems list is cut at 100; the states count every entry)
    settled = sum(report["states"].get(state, 0) for state in ("done", "skipped"))
    unsettled = n - len(broken) - settled
    check(unsettled == 0, f"{unsettled} files neither placed nor skipped")
    for relative in broken:
        check((source / relative).exists(), f"broken {relative} gone from the source")

    # verify
    organized_files = floors.files_below(dest)
    from bench.organize import blake3_pass

    os.sync()
    hashed_seconds, hashed_cpu, _ = cpu_timed(lambda: blake3_pass(organized_files))
    os.sync()
    ran = run([str(CLI), "verify", "--wait", "--json"], env)
    verified = json.loads(ran.stdout)
    share = verified["checked"] / len(organized_files)
    phases.append(
        Phase("verify", verified["checked"], ran, hashed_seconds * share, load(),
              floor_cpu=hashed_cpu * share)
    )  # fmt: skip
    h.note(
        f"verify: {verified['checked']} checked, {verified['ok']} ok, {verified['problems']}; "
        f"its job ran {job_seconds(verified['job']):.1f} s of the command's {ran.wall:.1f} s"
    )
    check(verified["ok"] == verified["checked"], "verify found problems")

    # dedupe
    ran = run([str(CLI), "dedupe", "--dry-run", "--json"], env)
    plan = json.loads(ran.stdout)
    phases.append(Phase("dedupe --dry-run", n - len(broken), ran, None, load()))
    ran = run([str(CLI), "dedupe", "--wait", "--json"], env, ok=(0, 5))
    deduped = json.loads(ran.stdout)
    phases.append(Phase("dedupe", n - len(broken), ran, None, load()))
    h.note(
        f"dedupe: plan keys {sorted(plan)[:8]}; job {deduped['job']['state']}, "
        f"report {_short(deduped['report'])}"
    )
    quarantine = hashes_below(home / "quarantine")
    left = hashes_below(source)
    everywhere = organized + left + quarantine
    check(
        everywhere == wanted,
        f"files lost or changed: {sum((wanted - everywhere).values())} missing",
    )
    kept = organized + Counter({k: v for k, v in left.items() if k in contents})
    check(max(kept.values()) == 1, "a content kept twice after dedupe")
    h.note(
        f"after dedupe: {sum(organized.values())} files organized, "
        f"{sum(left.values())} left in the source ({len(broken)} broken), "
        f"{sum(quarantine.values())} in quarantine; every generated file accounted for"
    )

    h.heading(f"{n} files: each phase against its floor")
    rows = []
    for phase in phases:
        rate = phase.files / phase.seconds
        floor_rate = phase.files / phase.floor_seconds if phase.floor_seconds else None
        rows.append([
            phase.name, phase.files, phase.seconds, rate,
            "" if floor_rate is None else floor_rate,
            "" if floor_rate is None else h.ratio(rate, floor_rate, name=f"{phase.name} / floor"),
            phase.ran.tree_mb, phase.ran.largest_mb,
            f"{phase.ran.cpu:.1f}" + (f" / {phase.floor_cpu:.1f}" if phase.floor_cpu else ""),
            "" if phase.floor_cpu is None else h.ratio(phase.floor_cpu, phase.ran.cpu),
            phase.load,
        ])  # fmt: skip
        h.figure(f"{phase.name} files/s", rate)
        h.figure(f"{phase.name} peak RSS MB", phase.ran.tree_mb)
    h.table(
        ["phase", "files", "seconds", "files/s", "floor files/s", "ratio", "peak RSS MB (tree)",
         "largest process MB", "CPU s (cmd / floor)", "CPU: floor / cmd",
         "load after (1/5/15)"],
        rows,
    )  # fmt: skip
    for phase in phases:
        if not phase.left_out:
            h.note(f"{phase.name}: its tree at its peak (MB): {phase.ran.at_peak}")
    h.note(
        "ratio: the command's files/s over its floor's (wall time, which on a loaded machine "
        "favours the side with more busy threads); CPU: the floor's CPU seconds over the "
        "command's, the figure the load sways least"
    )
    peak = max(phase.ran.tree_mb for phase in phases)
    h.note(
        f"peak RSS of any phase's process tree {peak:.0f} MB (target < {RSS_TARGET_MB}): "
        f"{'met' if peak < RSS_TARGET_MB else 'NOT met'}; floors: import the bare two-process "
        "loop as a process, organize a bare move in this process, verify one BLAKE3 pass"
    )
    if not args.keep:
        shutil.rmtree(work)
    return 0


def _short(report: dict[str, Any]) -> str:
    return ", ".join(
        f"{k} {v}" for k, v in report.items() if isinstance(v, int | float | str | dict)
    )[:300]


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--files", type=int, default=10_000, help="files in the set")
    parser.add_argument("--seed", type=int, default=1, help="the set's random seed")
    parser.add_argument("--cache", default=str(CACHE), help="where sets are made and reused")
    parser.add_argument("--keep", action="store_true", help="keep the run's work folder")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
