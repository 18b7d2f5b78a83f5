"""Benchmark ingest: the scan job on 12-megapixel JPEGs, against the bare work it does.

Run with ``.venv/bin/python bench/ingest.py [--quick] [--photos DIR]``. It prints:

0. the photo set: 2,000 (--quick: 200) 4000x3000 JPEGs with EXIF, generated once into
   /tmp/pp_bench_ingest/photos-N (or DIR) and reused on later runs while complete;
1. a first scan: ``import_folders`` into a fresh SQLite library, then an in-process
   burst ``Worker`` (concurrency = CPU count) with the process and the thread
   executor: files/s, MB/s, CPU seconds; then no-change rescans against a bare walk
   of the same tree. Each scan runs in a subprocess of its own, for a clean peak RSS;
2. where a first scan's time goes (a separate, probed run): walk, hashing, metadata,
   coordination;
3. hashing throughput: ``hash_file`` against a bare BLAKE3 loop over the same files,
   sequential and in a spawned pool of CPU-count processes, in both orders;
4. peak RSS of the process running the scan and of its pool processes.

The photos are in the page cache during the measurements (written or read just
before; caches are not dropped): the numbers are CPU-bound, not disk-bound. Timings
on this small shared machine are noisy: read the ratios, each measured in one run.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, as_completed, wait
from dataclasses import dataclass
from itertools import pairwise
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import blake3
import PIL
import sqlalchemy
from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline import scan
from photo_pipeline.pipeline.catalog import Catalog
from photo_pipeline.pipeline.imports import import_folders

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

import _photos  # noqa: E402
from coordinator import heading, note, ratio, table  # noqa: E402

DEFAULT_ROOT = Path(tempfile.gettempdir()) / "pp_bench_ingest"
MANIFEST = ".ingest-photos.json"  # hidden: the scan skips it
PHOTO_BYTES_ESTIMATE = 2_500_000  # a generous upper estimate, for the disk check
DISK_RESERVE = 2 * 1024**3
MIN_PHOTOS = 20
GENERATE_CHUNK = 10
CPUS = os.cpu_count() or 1
HASH_TARGET = 0.8
RESCAN_TARGET = 2.0  # "little more than walking": a no-change rescan within 2x the walk
CHILD_TIMEOUT_S = 900
_WALK = scan.walk  # the walk as the scan uses it, before the probe wraps it
MB = 1e6


@dataclass(frozen=True)
class Sizes:
    photos: int
    rescans: int  # no-change rescans (and walks, empty-folder scans) per scan process
    hash_rounds: int  # rounds of (bare, hash_file, hash_file, bare) passes


FULL = Sizes(photos=2000, rescans=5, hash_rounds=2)
QUICK = Sizes(photos=200, rescans=5, hash_rounds=3)


# ── helpers ────────────────────────────────────────────────────────────────────
def timed(function: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds (this process, all threads) of one call."""
    wall, cpu = time.perf_counter(), time.process_time()
    function()
    return time.perf_counter() - wall, time.process_time() - cpu


def peak_rss_mb() -> dict[str, float]:
    """Peak resident set size so far (Linux reports KiB): ru_maxrss of this process and
    of the largest of its waited-for children, and this process's own VmHWM."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    children = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return {"self": own / 1024, "children": children / 1024, "hwm": _photos.peak_memory_kb() / 1024}


def spawn_pool(size: int) -> ProcessPoolExecutor:
    """A pool like the worker's: spawned processes (forking a threaded process is unsafe)."""
    return ProcessPoolExecutor(size, mp_context=get_context("spawn"))


def start_pool(pool: ProcessPoolExecutor, size: int) -> float:
    """Start every process of ``pool`` (spawn, imports); returns the seconds it took."""
    started = time.perf_counter()
    pids: set[int] = set()
    while len(pids) < size:  # each task holds its process a moment: all get one
        pids |= {f.result() for f in [pool.submit(_photos.ready, 0.05) for _ in range(size)]}
    return time.perf_counter() - started


def verdict(value: float, target: float, *, at_least: bool) -> str:
    ok = value >= target if at_least else value <= target
    return "ok" if ok else ("BELOW target" if at_least else "OVER target")


# ── 0. photos ──────────────────────────────────────────────────────────────────
@dataclass(frozen=True)
class PhotoSet:
    root: Path
    files: list[tuple[str, int]]  # relative path, size
    generated_s: float | None  # None: reused from an earlier run
    notes: tuple[str, ...] = ()

    @property
    def total_bytes(self) -> int:
        return sum(size for _, size in self.files)

    def paths(self) -> list[str]:
        return [str(self.root / relative) for relative, _ in self.files]


def read_manifest(root: Path) -> dict[str, Any] | None:
    try:
        return json.loads((root / MANIFEST).read_text())
    except FileNotFoundError:
        return None


def write_manifest(root: Path, count: int, files: list[tuple[str, int]] | None) -> None:
    manifest = {
        "generator": _photos.GENERATOR,
        "count": count,
        "complete": files is not None,
        "files": dict(files or []),
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / MANIFEST).write_text(json.dumps(manifest, indent=0))


def set_problems(root: Path, manifest: dict[str, Any]) -> tuple[list[str], list[str]]:
    """Files of a complete set that are missing or changed, and foreign files."""
    expected: dict[str, int] = manifest["files"]
    found = {path: fingerprint for path, fingerprint in _WALK(str(root))}
    damaged = [p for p, size in expected.items() if (found.get(p) or (None,))[0] != size]
    foreign = sorted(set(found) - set(expected))
    return damaged, foreign


def existing_ancestor(path: Path) -> Path:
    while not path.exists():
        path = path.parent
    return path


def fit_to_disk(root: Path, count: int) -> tuple[int, list[str]]:
    """``count``, or fewer photos with a note when the disk is short."""
    existing = existing_ancestor(root)
    free = shutil.disk_usage(existing).free
    affordable = int((free - DISK_RESERVE) // PHOTO_BYTES_ESTIMATE)
    if affordable >= count:
        return count, []
    if affordable < MIN_PHOTOS:
        raise SystemExit(f"only {free / 1e9:.1f} GB free below {existing}: too little")
    message = (
        f"only {free / 1e9:.1f} GB free below {existing}: {affordable} photos instead of "
        f"{count} (~{PHOTO_BYTES_ESTIMATE / MB:.1f} MB each, {DISK_RESERVE >> 30} GB kept free)"
    )
    return affordable, [message]


def remove_partials(root: Path) -> None:
    """Half-written photos of an interrupted generation."""
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.startswith(".") and name.endswith(".partial"):
                os.unlink(os.path.join(folder, name))


def generate(root: Path, count: int) -> tuple[list[tuple[str, int]], float]:
    """Write photos 0..count-1 below ``root`` (skipping those present) in a process pool."""
    remove_partials(root)
    chunks = [
        list(range(i, min(i + GENERATE_CHUNK, count))) for i in range(0, count, GENERATE_CHUNK)
    ]
    files: list[tuple[str, int]] = []
    started = time.perf_counter()
    with spawn_pool(CPUS) as pool:
        futures = [pool.submit(_photos.write_photos, str(root), chunk) for chunk in chunks]
        for n, future in enumerate(as_completed(futures), 1):
            files += future.result()
            if n % max(1, len(chunks) // 4) == 0 or n == len(chunks):
                done = len(files)
                rate = done / (time.perf_counter() - started)
                print(f"  generated {done:,}/{count:,} photos ({rate:.1f}/s)", flush=True)
    return sorted(files), time.perf_counter() - started


def prepare_photos(root: Path, count: int) -> PhotoSet:
    """The photo set in ``root``: reused if complete and intact, else generated (an
    interrupted generation is resumed, missing or changed photos are rewritten)."""
    manifest = read_manifest(root)
    if manifest is None and root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root} is not empty and holds no photo set of this benchmark")
    if manifest is not None and manifest["generator"] != _photos.GENERATOR:
        raise SystemExit(f"{root} holds photos of another generator version: remove it")
    if manifest is None:
        count, notes = fit_to_disk(root, count)
    elif manifest["complete"]:
        notes = check_set(root, manifest)
        if not notes:
            return PhotoSet(
                root, sorted(manifest["files"].items()), None, other_count(manifest, count)
            )
        count = manifest["count"]
    else:
        notes = ["resuming an interrupted generation", *other_count(manifest, count)]
        count = manifest["count"]
    write_manifest(root, count, None)
    files, seconds = generate(root, count)
    write_manifest(root, count, files)
    return PhotoSet(root, files, seconds, tuple(notes))


def other_count(manifest: dict[str, Any], wanted: int) -> tuple[str, ...]:
    if manifest["count"] == wanted:
        return ()
    return (f"this set has {manifest['count']:,} photos, not {wanted:,}: used as it is",)


def check_set(root: Path, manifest: dict[str, Any]) -> list[str]:
    """Remove the photos of a complete set that were changed; a note if any were
    changed or missing (they are written again)."""
    damaged, foreign = set_problems(root, manifest)
    if foreign:
        raise SystemExit(f"{root} holds files that are not in its photo set: {foreign[0]}")
    for relative in damaged:
        (root / relative).unlink(missing_ok=True)
    return [f"{len(damaged)} photos of the set were missing or changed"] if damaged else []


def warm_cache(paths: list[str]) -> float:
    """Read every photo once, so that all measurements find them in the page cache."""
    started = time.perf_counter()
    for path in paths:
        with open(path, "rb") as fp:
            while fp.read(1 << 20):
                pass
    return time.perf_counter() - started


def memory_available() -> float:
    """MemAvailable in bytes (0 when unknown)."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def photos_section(photos: PhotoSet) -> None:
    count, total = len(photos.files), photos.total_bytes
    sizes = [size / MB for _, size in photos.files]
    heading(f"0. photos: {count:,} JPEGs of {_photos.SIZE[0]}x{_photos.SIZE[1]} with EXIF")
    note(f"in {photos.root}: {total / 1e9:.2f} GB, {statistics.mean(sizes):.2f} MB per photo "
         f"({min(sizes):.2f}–{max(sizes):.2f}); quality {_photos.QUALITY}, a smooth colour "
         f"field + grain (sigma {_photos.GRAIN_SIGMA}), 5 camera models, 2015–2024 dates, "
         "6 UTC offsets, 40 % with GPS, 20 % rotated; folders YYYY/MM")  # fmt: skip
    if photos.generated_s is None:
        note("reused from an earlier run (complete and unchanged)")
    else:
        note(f"generated in {photos.generated_s:.0f} s with {CPUS} processes "
             f"({count / photos.generated_s:.1f} photos/s)")  # fmt: skip
    for message in photos.notes:
        note(f"NOTE: {message}")
    seconds = warm_cache(photos.paths())
    note(f"read once more to fill the page cache: {seconds:.1f} s ({total / MB / seconds:,.0f} "
         "MB/s). Caches are not dropped (we cannot do it safely here), so every number below "
         "is with the photos in RAM: CPU-bound hashing and decoding, no disk reads")  # fmt: skip
    available = memory_available()
    if available and total > 0.6 * available:
        note(f"NOTE: the set ({total / 1e9:.1f} GB) is large for the {available / 1e9:.1f} GB "
             "of available memory: part of it may be read from disk")  # fmt: skip


# ── 1. scans (each in a subprocess: child side) ────────────────────────────────
@dataclass(frozen=True)
class Library:
    factory: sessionmaker[Session]
    service: JobService
    catalog: Catalog
    workers: WorkerRegistry
    config: WorkerConfig


def open_library(url: str, executor: str) -> Library:
    factory = open_database(url)
    config = WorkerConfig(
        job_types=(scan.JOB_TYPE,),
        concurrency=CPUS,
        executor=executor,
        burst=True,
        poll_seconds=0.05,
    )
    return Library(factory, JobService(factory), Catalog(factory), WorkerRegistry(factory), config)


def run_scan(lib: Library, folder: Path) -> dict[str, Any]:
    """Import ``folder`` and run the scan to its end with a new in-process worker, as
    ``photo-pipeline import --wait`` does without a worker running."""
    before, clock, process_cpu = os.times(), time.time(), time.process_time()
    started, thread_cpu = time.perf_counter(), time.thread_time()
    job = import_folders(lib.service, lib.catalog, [folder])[0]
    enqueued, import_cpu = time.perf_counter(), time.thread_time() - thread_cpu
    Worker(lib.service, lib.workers, registry, lib.config).run()
    ended, process_cpu = time.perf_counter(), time.process_time() - process_cpu
    after = os.times()
    progress = lib.service.progress(job["id"])
    return {
        "wall": ended - started,
        "began": clock,
        "import_s": enqueued - started,
        "import_cpu": import_cpu,
        "process_cpu": process_cpu,  # this process only, all threads (ns resolution)
        "state": lib.service.get(job["id"])["state"],
        "total": progress["total"],
        "by_state": progress["by_state"],
        "cpu_self": after.user + after.system - before.user - before.system,
        "cpu_children": (
            after.children_user
            + after.children_system
            - before.children_user
            - before.children_system
        ),
        "load": os.getloadavg()[0],
    }


def walk_scan(root: str) -> int:
    return sum(1 for _ in _WALK(root))


def walk_os(root: str) -> int:
    """os.walk + one stat per (visible) file."""
    count = 0
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        for name in names:
            if not name.startswith("."):
                os.stat(os.path.join(folder, name))
                count += 1
    return count


class ScanProbe:
    """Times (wall and thread CPU) the parts of a scan that run in the worker's own
    thread: walk, catalogue and job writes; sums the item timings that the probed item
    function brings back from the pool, and notes when the first item began and the
    last one ended."""

    def __init__(self) -> None:
        self._reset()

    def _reset(self) -> None:
        self.seconds: Counter[str] = Counter()
        self.spans: list[tuple[int, float, float]] = []  # pid, start, end of each item
        self.pool_peak_kb = 0

    def install(self) -> None:
        scan.inspect_file_within = _photos.probed_inspect_file
        scan._discover = self._timed(scan._discover, "discover")
        scan.walk = self._timed_iterator(scan.walk, "walk")
        Catalog.known_files = self._timed(Catalog.known_files, "known_files")
        # The scan writes its rows inside its fenced item write: record_in(session, reports).
        Catalog.record_in = self._recording(self._timed(Catalog.record_in, "record"))
        for name in ("add_items", "set_items", "items"):
            setattr(JobService, name, self._timed(getattr(JobService, name), name))

    def take(self) -> dict[str, float]:
        spans = sorted(self.spans)
        gaps = [max(0.0, b[1] - a[2]) for a, b in pairwise(spans) if a[0] == b[0]]
        taken = {
            **self.seconds,
            "first_item": min((s[1] for s in spans), default=0.0),
            "last_item": max((s[2] for s in spans), default=0.0),
            "idle_between_items": sum(gaps),
            "pool_peak_mb": self.pool_peak_kb / 1024,
        }
        self._reset()
        return taken

    def _add(self, name: str, wall: float, cpu: float) -> None:
        self.seconds[name] += time.perf_counter() - wall
        self.seconds[f"{name}_cpu"] += time.thread_time() - cpu

    def _timed(self, function: Callable[..., Any], name: str) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                return function(*args, **kwargs)
            finally:
                self._add(name, wall, cpu)

        return timed

    def _timed_iterator(self, function: Callable[..., Iterator[Any]], name: str) -> Callable:
        def timed(*args: Any, **kwargs: Any) -> Iterator[Any]:
            iterator = function(*args, **kwargs)
            while True:
                wall, cpu = time.perf_counter(), time.thread_time()
                try:
                    value = next(iterator)
                except StopIteration:
                    return
                finally:
                    self._add(name, wall, cpu)
                yield value

        return timed

    def _recording(self, record: Callable[..., None]) -> Callable[..., None]:
        def recording(catalog: Catalog, session: Any, reports: list[Any]) -> None:
            for report in reports:
                if isinstance(report, _photos.ProbedReport):
                    self.seconds.update(dict(report.timings))
                    self.seconds["hash_bytes"] += report.size
                    self.seconds["probed_items"] += 1
                    self.spans.append((report.pid, report.started, report.ended))
                    self.pool_peak_kb = max(self.pool_peak_kb, report.peak_kb)
            record(catalog, session, reports)

        return recording


def catalog_check(lib: Library, expected: int, first: dict, rescans: list[dict]) -> str:
    files = lib.catalog.files()
    present = sum(1 for f in files if f["state"] == "present")
    assets = len({f["asset_id"] for f in files if f["asset_id"] is not None})
    problems = []
    if first["state"] != "succeeded" or first["by_state"] != {"succeeded": expected}:
        problems.append(f"first scan {first['state']} {first['by_state']}")
    if any(r["state"] != "succeeded" or r["total"] for r in rescans):
        problems.append("a no-change rescan read files or did not succeed")
    if present != expected or assets != expected:
        problems.append(f"{present} files present, {assets} assets")
    return "FAILED: " + "; ".join(problems) if problems else f"ok ({present:,} files, assets)"


def scan_child(root: str, executor: str, rescans: int, probe: bool) -> dict[str, Any]:
    """First scan, then rounds of (walks, no-change rescan, empty-folder scan)."""
    probe_ = ScanProbe() if probe else None
    result: dict[str, Any] = {"executor": executor, "concurrency": CPUS}
    result["rss_start"] = peak_rss_mb()
    files = list(_WALK(root))
    result["files"], result["bytes"] = len(files), sum(f[1][0] for f in files if f[1])
    with tempfile.TemporaryDirectory(prefix="pp_bench_ingest_lib_") as tmp:
        empty = Path(tmp, "empty")
        empty.mkdir()
        lib = open_library(f"sqlite:///{tmp}/library.sqlite3", executor)
        try:
            if probe_ is not None:
                probe_.install()
            first = run_scan(lib, Path(root))
            result["rss_first"] = peak_rss_mb()
            result["probe_first"] = probe_.take() if probe_ else None
            rounds = [rescan_round(lib, root, empty) for _ in range(rescans)]
            result["probe_rescans"] = probe_.take() if probe_ else None
            rescans_ = [r["rescan"] for r in rounds]
            result["check"] = catalog_check(lib, len(files), first, rescans_)
        finally:
            lib.factory.kw["bind"].dispose()
    result["first"] = first
    for name in ("walk_scan", "walk_os", "rescan", "empty"):
        result[name] = [r["timings"][name][0] for r in rounds]
        result[f"{name}_cpu"] = [r["timings"][name][1] for r in rounds]
    result["rescan_import"] = [r["rescan"]["import_s"] for r in rounds]
    result["rss_end"] = peak_rss_mb()
    return result


def rescan_round(lib: Library, root: str, empty: Path) -> dict[str, Any]:
    """Walks, a no-change rescan and an empty-folder scan: (wall, CPU) seconds each."""
    rescan: dict[str, Any] = {}
    timings = {"walk_scan": timed(lambda: walk_scan(root)), "walk_os": timed(lambda: walk_os(root))}
    for name, folder in (("rescan", Path(root)), ("empty", empty)):
        run = run_scan(lib, folder)
        timings[name] = (run["wall"], run["process_cpu"])
        rescan = rescan or run
    return {"timings": timings, "rescan": rescan}


def child_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("root")
    parser.add_argument("executor", choices=["process", "thread"])
    parser.add_argument("--rescans", type=int, default=3)
    parser.add_argument("--probe", action="store_true")
    args = parser.parse_args(argv)
    result = scan_child(args.root, args.executor, args.rescans, args.probe)
    print(json.dumps(result))
    return 0


# ── 1. scans (parent side) ─────────────────────────────────────────────────────
def measure_scan(root: Path, executor: str, rescans: int, *, probe: bool = False) -> dict:
    """Run ``child_main`` in a fresh interpreter. It is started with ``-c`` so that the
    spawned item pool does not re-import this script (as it would a __main__ file):
    the pool processes then hold what a worker's pool holds."""
    code = "import sys, ingest; sys.exit(ingest.child_main(sys.argv[1:]))"
    command = [sys.executable, "-c", code, str(root), executor, f"--rescans={rescans}"]
    paths = [str(BENCH_DIR), *filter(None, [os.environ.get("PYTHONPATH")])]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
    done = subprocess.run(
        command + (["--probe"] if probe else []),
        capture_output=True,
        text=True,
        env=env,
        timeout=CHILD_TIMEOUT_S,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"the {executor} scan process failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def scan_section(photos: PhotoSet, sizes: Sizes) -> dict[str, dict]:
    n = len(photos.files)
    heading(f"1. first scan of {n:,} photos: import_folders + in-process Worker (burst, "
            f"concurrency {CPUS}), fresh SQLite library")  # fmt: skip
    note("wall = import_folders() + Worker(...).run() until the job succeeded, pool start "
         "included (a new worker spawns its pool, as `photo-pipeline import --wait` does); "
         "CPU = user + system seconds of the worker process and of its pool processes")  # fmt: skip
    results = {executor: measure_scan(photos.root, executor, sizes.rescans)
               for executor in ("process", "thread")}  # fmt: skip
    rows = []
    for executor, result in results.items():
        first, mb = result["first"], result["bytes"] / MB
        cpu = first["cpu_self"] + first["cpu_children"]
        rows.append([
            executor, result["files"], first["wall"], result["files"] / first["wall"],
            mb / first["wall"], first["cpu_self"], first["cpu_children"],
            cpu / result["files"] * 1000, f"{cpu / (first['wall'] * CPUS):.0%}",
            first["load"], result["check"],
        ])  # fmt: skip
    table(
        ["executor", "files", "wall s", "files/s", "MB/s", "worker CPU s", "pool CPU s",
         "CPU ms/file", "CPU busy", "load", "check: all succeeded, 1 asset per file"],
        rows,
    )  # fmt: skip
    note(f"CPU busy = CPU s / (wall × {CPUS} cores); load = 1-minute load average at the end "
         "of the scan (the machine is shared: below 100 % busy, other processes or waits "
         "took the rest)")  # fmt: skip
    process, thread = (results[e]["first"]["wall"] for e in ("process", "thread"))
    note(f"thread / process executor wall time: {thread / process:.2f} (below 1: threads "
         "faster; BLAKE3 and Pillow's decoder release the GIL)")  # fmt: skip
    rescan_table(results, n)
    return results


RESCAN_RUNS = (
    ("bare walk: scan.walk (the scan's own walker)", "walk_scan"),
    ("bare walk: os.walk + os.stat", "walk_os"),
    ("no-change rescan (import_folders + Worker.run)", "rescan"),
    ("scan of an empty folder (fixed cost)", "empty"),
)


def rescan_table(results: dict[str, dict], n: int) -> None:
    heading(f"1b. no-change rescan of the same {n:,} files vs a bare walk of the tree")
    note("each round: scan.walk, os.walk + stat, a rescan (a second import_folders + "
         "Worker.run, nothing changed), a scan of an empty folder in the same library "
         "(the fixed cost of a scan job). Best and median of the rounds; CPU = CPU time of "
         "the scan process (time.process_time), which the machine's load hardly changes, "
         "unlike wall times of a few ms")  # fmt: skip
    rows = []
    for executor, result in results.items():
        walk, walk_cpu = min(result["walk_scan"]), min(result["walk_scan_cpu"])
        for label, key in RESCAN_RUNS:
            best, cpu = min(result[key]), min(result[f"{key}_cpu"])
            rows.append([
                label, executor, best * 1000, statistics.median(result[key]) * 1000,
                cpu * 1000, "" if key == "empty" else n / best, ratio(best, walk),
                ratio(cpu, walk_cpu),
            ])  # fmt: skip
        per_file = [
            (min(result[f"rescan{c}"]) - min(result[f"empty{c}"])) / n for c in ("", "_cpu")
        ]
        rows.append([
            "rescan − empty-folder scan, per file (µs)", executor, per_file[0] * 1e6, "",
            per_file[1] * 1e6, "", ratio(per_file[0] * n, walk), ratio(per_file[1] * n, walk_cpu),
        ])  # fmt: skip
    table(["run", "executor", "best ms", "median ms", "best CPU ms", "files/s",
           "vs scan.walk", "CPU vs scan.walk"], rows)  # fmt: skip
    process = results["process"]
    for what, suffix in (("wall", ""), ("CPU", "_cpu")):
        value = min(process[f"rescan{suffix}"]) / min(process[f"walk_scan{suffix}"])
        judged = verdict(value, RESCAN_TARGET, at_least=False)
        note(f"rescan / scan.walk ({what}, process executor's run): {value:.1f}x — target "
             f"≤ {RESCAN_TARGET:.0f}x: {judged}")  # fmt: skip


# ── 2. where the time goes ─────────────────────────────────────────────────────
def split_parts(result: dict) -> list[tuple[str, float, float]]:
    """(part, wall seconds, CPU seconds) of a probed first scan, adding up to its wall
    and CPU time; pool parts in wall are worker-seconds divided by the pool size."""
    first, probe, pool = result["first"], result["probe_first"], result["concurrency"]
    item_rest = [probe[f"item{c}"] - probe[f"hash{c}"] - probe[f"metadata{c}"]
                 for c in ("", "_cpu")]  # fmt: skip
    parts = [
        ("import_folders (register folder, enqueue job)", first["import_s"],
         first["import_cpu"]),
        ("walk (scan.walk in _discover)", probe["walk"], probe["walk_cpu"]),
        ("rest of _discover (known_files, compare, add_items)",
         probe["discover"] - probe["walk"], probe["discover_cpu"] - probe["walk_cpu"]),
        ("hashing (hash_file, in the pool)", probe["hash"] / pool, probe["hash_cpu"]),
        ("metadata (read_metadata, in the pool)", probe["metadata"] / pool,
         probe["metadata_cpu"]),
        ("rest of inspect_file (stat, open, report)", item_rest[0] / pool, item_rest[1]),
    ]  # fmt: skip
    cpu = first["cpu_self"] + first["cpu_children"]
    parts.append((
        "coordination (the rest)",
        first["wall"] - sum(p[1] for p in parts),
        cpu - sum(p[2] for p in parts),
    ))  # fmt: skip
    return parts


def coordination_parts(result: dict) -> list[tuple[str, float, float | None]]:
    """Pieces of the coordination share that the probe saw directly."""
    first, probe = result["first"], result["probe_first"]
    discovered = first["began"] + first["import_s"]  # + worker start + discover, below
    pieces: list[tuple[str, float, float | None]] = [
        ("pool start: from discover's end to the first item",
         probe["first_item"] - discovered - probe["discover"], None),
        (f"pool idle between items (waiting for work) / {result['concurrency']}",
         probe["idle_between_items"] / result["concurrency"], None),
        ("after the last item: final writes, worker and pool stop",
         first["began"] + first["wall"] - probe["last_item"], None),
    ]  # fmt: skip
    for label, key in (
        ("worker thread: Catalog.record_in (catalogue rows)", "record"),
        ("worker thread: JobService.set_items (item states)", "set_items"),
        ("worker thread: JobService.items (paging queued items)", "items"),
    ):
        pieces.append((label, probe[key], probe[f"{key}_cpu"]))
    return pieces


def split_section(photos: PhotoSet, sizes: Sizes, clean: dict) -> dict:
    n = len(photos.files)
    heading(f"2. where a first scan's time goes ({n:,} photos, process executor, probed run)")
    note("a separate run with timers: in the worker's thread around scan.walk, "
         "Catalog.known_files/record and JobService.add_items/set_items/items (wall and "
         "thread CPU); in the pool, inspect_file is wrapped to time hash_file and "
         "read_metadata (wall and process CPU)")  # fmt: skip
    result = measure_scan(photos.root, "process", sizes.rescans, probe=True)
    first = result["first"]
    wall, cpu = first["wall"], first["cpu_self"] + first["cpu_children"]
    note(f"probed wall {wall:.1f} s vs {clean['first']['wall']:.1f} s unprobed "
         f"({ratio(wall, clean['first']['wall'])}); CPU {cpu:.1f} s vs "
         f"{clean['first']['cpu_self'] + clean['first']['cpu_children']:.1f} s unprobed; "
         f"load average (1 min) at the end: {first['load']:.1f}")  # fmt: skip
    rows = [[label, w, f"{w / wall:.1%}", c, f"{c / cpu:.1%}", w / n * 1000]
            for label, w, c in split_parts(result)]  # fmt: skip
    rows.append(["total", wall, "100.0%", cpu, "100.0%", wall / n * 1000])
    for label, w, c in coordination_parts(result):
        rows.append([f"  ⊂ {label}", w, f"({w / wall:.1%})", "" if c is None else c,
                     "" if c is None else f"({c / cpu:.1%})", w / n * 1000])  # fmt: skip
    table(["part", "wall s", "of wall", "CPU s", "of CPU", "wall ms/file"], rows)
    probe, pool = result["probe_first"], result["concurrency"]
    note(f"pool rows: worker-seconds / {pool} (the pool runs {pool} items at once), so the "
         "wall shares add up to the wall time; CPU = user + system of the worker process "
         "and its pool processes. ⊂ rows are inside the coordination share or overlap "
         "the pool's work (the worker's thread writes while the pool reads photos)")  # fmt: skip
    note(f"pool busy {probe['item'] / (wall * pool):.0%} of the wall in inspect_file; per item: "
         f"read_metadata {probe['metadata_cpu'] / n * 1000:.1f} ms CPU "
         f"({probe['metadata'] / n * 1000:.1f} ms wall), hash_file "
         f"{probe['hash_cpu'] / n * 1000:.2f} ms CPU")  # fmt: skip
    rescan_split(result, n)
    return result


def rescan_split(result: dict, n: int) -> None:
    probe, rounds = result["probe_rescans"], len(result["rescan"])
    heading(f"2b. where a no-change rescan's time goes ({n:,} files, probed, mean of {rounds})")
    wall, cpu = statistics.mean(result["rescan"]), statistics.mean(result["rescan_cpu"])
    parts = [
        ("import_folders (register folder, enqueue job)",
         statistics.mean(result["rescan_import"]), None),
        ("walk (scan.walk, timed per file: the timer adds ~1 µs a file)",
         probe["walk"] / rounds, probe["walk_cpu"] / rounds),
        ("known_files (SELECT the source's files into a dict)",
         probe["known_files"] / rounds, probe["known_files_cpu"] / rounds),
        ("rest of _discover (compare fingerprints)",
         (probe["discover"] - probe["walk"] - probe["known_files"]) / rounds,
         (probe["discover_cpu"] - probe["walk_cpu"] - probe["known_files_cpu"]) / rounds),
    ]  # fmt: skip
    measured = [c for _, _, c in parts if c is not None]
    parts.append(("the rest: worker start/stop, claim, finish (~16 transactions)",
                  wall - sum(w for _, w, _ in parts), None))  # fmt: skip
    rows = [[label, w * 1000, "" if c is None else c * 1000, w / n * 1e6] for label, w, c in parts]
    rows.append(["total", wall * 1000, cpu * 1000, wall / n * 1e6])
    table(["part", "wall ms", "CPU ms", "wall µs/file"], rows)
    empty = statistics.mean(result["empty"]) * 1000
    note(f"(the walk and _discover are {sum(measured) / cpu:.0%} of the rescan's CPU; "
         f"a scan of an empty folder took {empty:.1f} ms on average)")  # fmt: skip


# ── 3. hashing ─────────────────────────────────────────────────────────────────
HASHERS: dict[str, Callable[[str], str]] = {
    "bare read()": _photos.bare_blake3,
    "bare readinto()": _photos.bare_blake3_readinto,
    "hash_file": _photos.pipeline_hash,
}
BRIEF_BARE, BEST_BARE = "bare read()", "bare readinto()"


def sequential_pass(function: Callable[[str], str], paths: list[str]) -> tuple[float, list]:
    started = time.perf_counter()
    digests = [function(path) for path in paths]
    return time.perf_counter() - started, digests


def pool_pass(
    pool: ProcessPoolExecutor, size: int, function: Callable[[str], str], paths: list[str]
) -> tuple[float, list]:
    """One file per task with 2 × pool size tasks in flight, as JobContext.map does."""
    digests: list[str | None] = [None] * len(paths)
    in_flight: dict[Future[str], int] = {}
    started = time.perf_counter()
    for index, path in enumerate(paths):
        in_flight[pool.submit(function, path)] = index
        if len(in_flight) >= 2 * size:
            collect(in_flight, digests)
    while in_flight:
        collect(in_flight, digests)
    return time.perf_counter() - started, digests


def collect(in_flight: dict[Future[str], int], digests: list[str | None]) -> None:
    done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
    for future in done:
        digests[in_flight.pop(future)] = future.result()


def both_orders(run: Callable[[Callable[[str], str]], tuple[float, list]], rounds: int) -> dict:
    """Passes of every hasher in list order, then in reverse, ``rounds`` times; returns
    the seconds per order and hasher, and whether all digests agreed."""
    names = list(HASHERS)
    orders = {f"{names[0]} first": names, f"{names[-1]} first": names[::-1]}
    seconds: dict[str, dict[str, list[float]]] = {order: {} for order in orders}
    digests: set[tuple[str, ...]] = set()
    for _ in range(rounds):
        for order, sequence in orders.items():
            for name in sequence:
                elapsed, found = run(HASHERS[name])
                seconds[order].setdefault(name, []).append(elapsed)
                digests.add(tuple(found))
    return {"seconds": seconds, "agree": len(digests) == 1}


def hashing_rows(mode: str, result: dict, total: float) -> tuple[list[list[Any]], dict]:
    rows, sums = [], Counter[str]()
    for order, by_name in result["seconds"].items():
        rate = {name: total / statistics.mean(times) for name, times in by_name.items()}
        sums.update({name: statistics.mean(times) for name, times in by_name.items()})
        rows.append([
            mode, order, *(rate[name] for name in HASHERS),
            ratio(rate["hash_file"], rate[BRIEF_BARE]), ratio(rate["hash_file"], rate[BEST_BARE]),
            "ok" if result["agree"] else "DIFFER",
        ])  # fmt: skip
    ratios = {bare: sums[bare] / sums["hash_file"] for bare in (BRIEF_BARE, BEST_BARE)}
    return rows, ratios


def hashing_section(photos: PhotoSet, sizes: Sizes, probed: dict) -> dict[str, dict]:
    paths = photos.paths()
    total = photos.total_bytes / MB
    heading(f"3. hashing throughput: hash_file vs a bare BLAKE3 loop over the {len(paths):,} "
            f"photos ({total:,.0f} MB)")  # fmt: skip
    note("bare read() = blake3.blake3() fed by open(...).read(1 MiB) (a new bytes object per "
         "chunk); bare readinto() = the same into one reused 1 MiB buffer; hash_file = the "
         "scan's (open_original + readinto a reused buffer). Every hasher in both orders; "
         "photos in the page cache, so this is CPU-bound hashing")  # fmt: skip
    sequential = both_orders(lambda f: sequential_pass(f, paths), sizes.hash_rounds)
    with spawn_pool(CPUS) as pool:
        start_s = start_pool(pool, CPUS)
        pooled = both_orders(lambda f: pool_pass(pool, CPUS, f, paths), sizes.hash_rounds)
    rows, ratios = [], {}
    for mode, result in (("sequential", sequential), (f"pool of {CPUS}", pooled)):
        mode_rows, ratios[mode] = hashing_rows(mode, result, total)
        rows += mode_rows
    probe = probed["probe_first"]
    in_scan = probe["hash_bytes"] / MB / probe["hash"]
    in_scan_cpu = probe["hash_bytes"] / MB / probe["hash_cpu"]
    rows.append(["in the probed first scan", "per process, wall", "", "", in_scan, "", "", ""])
    rows.append(["in the probed first scan", "per CPU-second", "", "", in_scan_cpu, "", "", ""])
    table(["mode", "order", *(f"{name} MB/s" for name in HASHERS), "hash_file/read()",
           "hash_file/readinto()", "digests"], rows)  # fmt: skip
    note(f"pool start (spawn {CPUS} processes + imports): {start_s:.2f} s, outside the "
         "timings. In the scan, hashing shares the cores with metadata decoding and the "
         "worker's database writes (and, here, other users' processes): compare its CPU "
         "rate, not its wall rate")  # fmt: skip
    for mode, by_bare in ratios.items():
        for bare, value in by_bare.items():
            note(f"{mode}: hash_file / {bare} = {value:.2f} (mean of both orders) — target "
                 f"≥ {HASH_TARGET}: {verdict(value, HASH_TARGET, at_least=True)}")  # fmt: skip
    return ratios


# ── 4. memory ──────────────────────────────────────────────────────────────────
def rss_section(results: dict[str, dict], n: int) -> None:
    heading(f"4. peak RSS of the scan ({n:,} photos), MB")
    note("ru_maxrss (getrusage) of the scan process (SELF) and of its largest pool process "
         "(CHILDREN, counted once the pool is shut down). Caveat: on Linux a process's "
         "ru_maxrss starts at the RSS of the process that forked it (exec keeps the old "
         "high-water mark), so the scan process shows at least this benchmark's size and a "
         "pool process at least the scan process's; VmHWM (/proc/self/status) is a "
         "process's own peak; the probed run reports it from within the pool")  # fmt: skip
    rows = []
    for label, result in results.items():
        start, first, end = result["rss_start"], result["rss_first"], result["rss_end"]
        probe = result.get("probe_first") or {}
        pooled = label.startswith("process")
        rows.append([
            label, start["self"], first["self"], start["hwm"], first["hwm"], end["hwm"],
            first["children"] if pooled else "", probe.get("pool_peak_mb") or "",
        ])  # fmt: skip
    table(["scan process", "maxrss start", "maxrss 1st scan", "VmHWM start", "VmHWM 1st scan",
           "VmHWM rescans", "pool maxrss", "pool VmHWM"], rows)  # fmt: skip


# ── main ───────────────────────────────────────────────────────────────────────
def findings(results: dict[str, dict], probed: dict, hashing: dict[str, dict]) -> None:
    heading("summary")
    process, thread = results["process"], results["thread"]
    n = process["files"]
    for label, result in (("process", process), ("thread", thread)):
        first = result["first"]
        cpu = first["cpu_self"] + first["cpu_children"]
        note(f"first scan, {label} executor: {n / first['wall']:.1f} files/s, "
             f"{result['bytes'] / MB / first['wall']:.0f} MB/s; {cpu / n * 1000:.1f} CPU-ms "
             f"per file (CPU-bound ceiling on {CPUS} idle cores: "
             f"{CPUS * n / cpu:.0f} files/s)")  # fmt: skip
    rescan = min(process["rescan"]) / min(process["walk_scan"])
    rescan_cpu = min(process["rescan_cpu"]) / min(process["walk_scan_cpu"])
    marginal = (min(process["rescan_cpu"]) - min(process["empty_cpu"])) / min(
        process["walk_scan_cpu"]
    )
    note(f"no-change rescan: {n / min(process['rescan']):,.0f} files/s, {rescan:.1f}x a bare "
         f"walk in wall time, {rescan_cpu:.1f}x in CPU time (target ≤ {RESCAN_TARGET:.0f}x: "
         f"{verdict(rescan_cpu, RESCAN_TARGET, at_least=False)}); per file, without the fixed "
         f"cost of a scan job (~{min(process['empty_cpu']) * 1000:.0f} ms CPU): "
         f"{marginal:.1f}x ({verdict(marginal, RESCAN_TARGET, at_least=False)})")  # fmt: skip
    for mode, by_bare in hashing.items():
        note(f"hashing, {mode}: hash_file = " + ", ".join(
            f"{value:.2f}x {bare} ({verdict(value, HASH_TARGET, at_least=True)})"
            for bare, value in by_bare.items()))  # fmt: skip
    shares = {label: (w / probed["first"]["wall"], c) for label, w, c in split_parts(probed)}
    cpu = sum(c for _, c in shares.values())
    note("first-scan split (share of wall / of CPU): " + "; ".join(
        f"{label.split(' (')[0]} {w:.0%} / {c / cpu:.0%}" for label, (w, c) in shares.items()
    ))  # fmt: skip
    note(f"peak RSS (VmHWM): scan process {process['rss_first']['hwm']:.0f} MB with the "
         f"process executor (pool processes {probed['probe_first']['pool_peak_mb']:.0f} MB "
         f"each), {thread['rss_first']['hwm']:.0f} MB with the thread executor")  # fmt: skip


def header(args: argparse.Namespace, root: Path) -> None:
    print(f"photo-pipeline ingest benchmark ({'quick' if args.quick else 'full'} run)")
    usage = shutil.disk_usage(existing_ancestor(root))
    print(
        f"{CPUS} CPUs, {memory_available() / 1e9:.1f} GB RAM available, "
        f"{usage.free / 1e9:.0f} GB free on the photo disk; Python "
        f"{platform.python_version()}, Pillow {PIL.__version__}, blake3 "
        f"{blake3.__version__}, SQLAlchemy {sqlalchemy.__version__}"
    )
    load = ", ".join(f"{v:.1f}" for v in os.getloadavg())
    print(f"load average {load} (other users share this machine: read CPU columns and ratios)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="200 photos instead of 2,000")
    parser.add_argument("--photos", type=Path, help="where to keep (and find) the photo set")
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else FULL
    root = args.photos or DEFAULT_ROOT / f"photos-{sizes.photos}"
    root = root.resolve()
    began = time.perf_counter()
    DEFAULT_ROOT.mkdir(parents=True, exist_ok=True)
    header(args, root)
    photos = prepare_photos(root, sizes.photos)
    photos_section(photos)
    results = scan_section(photos, sizes)
    probed = split_section(photos, sizes, results["process"])
    hashing = hashing_section(photos, sizes, probed)
    rss_section({**{f"{e} executor": r for e, r in results.items()},
                 "process executor, probed": probed}, len(photos.files))  # fmt: skip
    findings(results, probed, hashing)
    print(f"\ndone in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
