"""The ingest benchmark's scans, child side (section 1): run in a fresh interpreter of
their own (``bench._ingest_scans.measure_scan``), so that each scan process has a clean
peak RSS and its spawned item pool holds what a worker's pool holds. The probed run's
item function (``probed_inspect_file``) runs in that pool, which imports it from here."""

from __future__ import annotations

import argparse
import dataclasses
import os
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from bench import _harness as h
from bench._ingest_common import CPUS, WALK, peak_rss_mb
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog, FileReport


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
    return sum(1 for _ in WALK(root))


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


# ── the item probe (in the pool) ───────────────────────────────────────────────
_ORIGINAL_INSPECT = scan.inspect_file_within  # taken before ScanProbe points the scan here
_ITEM = threading.local()
_PATCH_LOCK = threading.Lock()


@dataclasses.dataclass(frozen=True)
class ProbedReport(FileReport):
    """A FileReport (the catalogue records it as usual) with the item's timings: wall
    and CPU seconds of the item, of hash_file and of read_metadata."""

    timings: tuple[tuple[str, float], ...] = ()
    started: float = 0.0  # time.time() when the item began, comparable across processes
    ended: float = 0.0
    pid: int = 0
    peak_kb: int = 0  # VmHWM of the pool process after the item


def _item_timed(function: Callable[..., Any], name: str) -> Callable[..., Any]:
    def timed(*args: Any, **kwargs: Any) -> Any:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return function(*args, **kwargs)
        finally:
            _ITEM.seconds[name] += time.perf_counter() - wall
            _ITEM.seconds[f"{name}_cpu"] += time.process_time() - cpu

    timed.probed = True  # type: ignore[attr-defined]
    return timed


def _install_item_probe() -> None:
    """Time the scan module's hash_file and read_metadata in this process (once)."""
    with _PATCH_LOCK:
        if not getattr(scan.hash_file, "probed", False):
            scan.hash_file = _item_timed(scan.hash_file, "hash")
            scan.read_metadata = _item_timed(scan.read_metadata, "metadata")


def probed_inspect_file(
    allowed: Sequence[str], params: dict[str, Any], item_key: str
) -> scan.Inspected:
    """``scan.inspect_file_within`` with its hashing and metadata reading timed (the
    report it returns is a ProbedReport)."""
    _install_item_probe()
    _ITEM.seconds = dict.fromkeys(("hash", "hash_cpu", "metadata", "metadata_cpu"), 0.0)
    started, wall, cpu = time.time(), time.perf_counter(), time.process_time()
    inspected = _ORIGINAL_INSPECT(allowed, params, item_key)
    report = inspected.report
    _ITEM.seconds["item"] = time.perf_counter() - wall
    _ITEM.seconds["item_cpu"] = time.process_time() - cpu
    fields = {f.name: getattr(report, f.name) for f in dataclasses.fields(report)}
    probed = ProbedReport(
        **fields,
        timings=tuple(_ITEM.seconds.items()),
        started=started,
        ended=time.time(),
        pid=os.getpid(),
        peak_kb=h.peak_rss_kb(),
    )
    return dataclasses.replace(inspected, report=probed)


# ── the scan process's own probe ───────────────────────────────────────────────
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
        scan.inspect_file_within = probed_inspect_file
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
        def recording(catalog: Catalog, session: Any, reports: list[Any], **kw: Any) -> None:
            for report in reports:
                if isinstance(report, ProbedReport):
                    self.seconds.update(dict(report.timings))
                    self.seconds["hash_bytes"] += report.size
                    self.seconds["probed_items"] += 1
                    self.spans.append((report.pid, report.started, report.ended))
                    self.pool_peak_kb = max(self.pool_peak_kb, report.peak_kb)
            record(catalog, session, reports, **kw)

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
    files = list(WALK(root))
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
    timings = {
        "walk_scan": h.timed(lambda: walk_scan(root)),
        "walk_os": h.timed(lambda: walk_os(root)),
    }
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
    h.print_result(scan_child(args.root, args.executor, args.rescans, args.probe))
    return 0
