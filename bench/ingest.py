"""Benchmark ingest: the scan job on 12-megapixel JPEGs, against the bare work it does.

Run with ``.venv/bin/python -m bench.ingest [--quick] [--photos DIR]``. It prints:

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

import shutil
import sys
from argparse import Namespace
from pathlib import Path

from bench import _harness as h
from bench._ingest_common import CPUS, FULL, HASH_TARGET, MB, QUICK, RESCAN_TARGET, verdict
from bench._ingest_hashing import hashing_section
from bench._ingest_photos import (
    DEFAULT_ROOT,
    existing_ancestor,
    memory_available,
    photos_section,
    prepare_photos,
)
from bench._ingest_scans import scan_section, split_parts, split_section


def rss_section(results: dict[str, dict], n: int) -> None:
    h.heading(f"4. peak RSS of the scan ({n:,} photos), MB")
    h.note("ru_maxrss (getrusage) of the scan process (SELF) and of its largest pool process "
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
    h.table(["scan process", "maxrss start", "maxrss 1st scan", "VmHWM start", "VmHWM 1st scan",
           "VmHWM rescans", "pool maxrss", "pool VmHWM"], rows)  # fmt: skip


def findings(results: dict[str, dict], probed: dict, hashing: dict[str, dict]) -> None:
    h.heading("summary")
    process, thread = results["process"], results["thread"]
    n = process["files"]
    for label, result in (("process", process), ("thread", thread)):
        first = result["first"]
        cpu = first["cpu_self"] + first["cpu_children"]
        h.note(f"first scan, {label} executor: {n / first['wall']:.1f} files/s, "
             f"{result['bytes'] / MB / first['wall']:.0f} MB/s; {cpu / n * 1000:.1f} CPU-ms "
             f"per file (CPU-bound ceiling on {CPUS} idle cores: "
             f"{CPUS * n / cpu:.0f} files/s)")  # fmt: skip
    rescan = min(process["rescan"]) / min(process["walk_scan"])
    rescan_cpu = min(process["rescan_cpu"]) / min(process["walk_scan_cpu"])
    marginal = (min(process["rescan_cpu"]) - min(process["empty_cpu"])) / min(
        process["walk_scan_cpu"]
    )
    h.note(f"no-change rescan: {n / min(process['rescan']):,.0f} files/s, {rescan:.1f}x a bare "
         f"walk in wall time, {rescan_cpu:.1f}x in CPU time (target ≤ {RESCAN_TARGET:.0f}x: "
         f"{verdict(rescan_cpu, RESCAN_TARGET, at_least=False)}); per file, without the fixed "
         f"cost of a scan job (~{min(process['empty_cpu']) * 1000:.0f} ms CPU): "
         f"{marginal:.1f}x ({verdict(marginal, RESCAN_TARGET, at_least=False)})")  # fmt: skip
    for mode, by_bare in hashing.items():
        h.note(f"hashing, {mode}: hash_file = " + ", ".join(
            f"{value:.2f}x {bare} ({verdict(value, HASH_TARGET, at_least=True)})"
            for bare, value in by_bare.items()))  # fmt: skip
    shares = {label: (w / probed["first"]["wall"], c) for label, w, c in split_parts(probed)}
    cpu = sum(c for _, c in shares.values())
    h.note("first-scan split (share of wall / of CPU): " + "; ".join(
        f"{label.split(' (')[0]} {w:.0%} / {c / cpu:.0%}" for label, (w, c) in shares.items()
    ))  # fmt: skip
    h.note(f"peak RSS (VmHWM): scan process {process['rss_first']['hwm']:.0f} MB with the "
         f"process executor (pool processes {probed['probe_first']['pool_peak_mb']:.0f} MB "
         f"each), {thread['rss_first']['hwm']:.0f} MB with the thread executor")  # fmt: skip


def body(args: Namespace) -> None:
    sizes = QUICK if args.quick else FULL
    root = (args.photos or DEFAULT_ROOT / f"photos-{sizes.photos}").resolve()
    DEFAULT_ROOT.mkdir(parents=True, exist_ok=True)
    usage = shutil.disk_usage(existing_ancestor(root))
    print(f"{memory_available() / 1e9:.1f} GB RAM available, {usage.free / 1e9:.0f} GB free on "
          f"the photo disk; {h.versions('pillow', 'blake3', 'sqlalchemy')}")  # fmt: skip
    photos = prepare_photos(root, sizes.photos)
    photos_section(photos)
    results = scan_section(photos, sizes)
    probed = split_section(photos, sizes, results["process"])
    hashing = hashing_section(photos, sizes, probed)
    rss_section({**{f"{e} executor": r for e, r in results.items()},
                 "process executor, probed": probed}, len(photos.files))  # fmt: skip
    findings(results, probed, hashing)


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="200 photos instead of 2,000")
    parser.add_argument("--photos", type=Path, help="where to keep (and find) the photo set")
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
