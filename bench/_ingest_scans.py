"""The ingest benchmark's scans, parent side: a first scan and no-change rescans with
the process and the thread executor (section 1), and where a first scan's time goes
(section 2, a probed run)."""

from __future__ import annotations

import statistics
from pathlib import Path

from bench import _harness as h
from bench._ingest_common import CPUS, MB, RESCAN_TARGET, Sizes, verdict
from bench._ingest_photos import PhotoSet

CHILD_TIMEOUT_S = 900


def measure_scan(root: Path, executor: str, rescans: int, *, probe: bool = False) -> dict:
    """Run ``child_main`` in a fresh interpreter. It is started with ``-c``, not as a
    script, so that the spawned item pool does not re-import a __main__ module: the
    pool processes then hold what a worker's pool holds."""
    code = "import sys; from bench._ingest_scan_child import child_main; "
    code += "sys.exit(child_main(sys.argv[1:]))"
    command = ["-c", code, str(root), executor, f"--rescans={rescans}"]
    command += ["--probe"] if probe else []
    return h.run_json(command, f"the {executor} scan process", timeout=CHILD_TIMEOUT_S)


def scan_section(photos: PhotoSet, sizes: Sizes) -> dict[str, dict]:
    n = len(photos.files)
    h.heading(f"1. first scan of {n:,} photos: import_folders + in-process Worker (burst, "
            f"concurrency {CPUS}), fresh SQLite library")  # fmt: skip
    h.note("wall = import_folders() + Worker(...).run() until the job succeeded, pool start "
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
    h.table(
        ["executor", "files", "wall s", "files/s", "MB/s", "worker CPU s", "pool CPU s",
         "CPU ms/file", "CPU busy", "load", "check: all succeeded, 1 asset per file"],
        rows,
    )  # fmt: skip
    h.note(f"CPU busy = CPU s / (wall × {CPUS} cores); load = 1-minute load average at the end "
         "of the scan (the machine is shared: below 100 % busy, other processes or waits "
         "took the rest)")  # fmt: skip
    process, thread = (results[e]["first"]["wall"] for e in ("process", "thread"))
    h.note(f"thread / process executor wall time: {thread / process:.2f} (below 1: threads "
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
    h.heading(f"1b. no-change rescan of the same {n:,} files vs a bare walk of the tree")
    h.note("each round: scan.walk, os.walk + stat, a rescan (a second import_folders + "
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
                cpu * 1000, "" if key == "empty" else n / best, h.ratio(best, walk),
                h.ratio(cpu, walk_cpu),
            ])  # fmt: skip
        per_file = [
            (min(result[f"rescan{c}"]) - min(result[f"empty{c}"])) / n for c in ("", "_cpu")
        ]
        rows.append([
            "rescan − empty-folder scan, per file (µs)", executor, per_file[0] * 1e6, "",
            per_file[1] * 1e6, "", h.ratio(per_file[0] * n, walk),
            h.ratio(per_file[1] * n, walk_cpu),
        ])  # fmt: skip
    h.table(["run", "executor", "best ms", "median ms", "best CPU ms", "files/s",
           "vs scan.walk", "CPU vs scan.walk"], rows)  # fmt: skip
    process = results["process"]
    for what, suffix in (("wall", ""), ("CPU", "_cpu")):
        value = min(process[f"rescan{suffix}"]) / min(process[f"walk_scan{suffix}"])
        h.figure(f"rescan / scan.walk, {what}", value)
        judged = verdict(value, RESCAN_TARGET, at_least=False)
        h.note(f"rescan / scan.walk ({what}, process executor's run): {value:.1f}x — target "
             f"≤ {RESCAN_TARGET:.0f}x: {judged}")  # fmt: skip


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
    h.heading(f"2. where a first scan's time goes ({n:,} photos, process executor, probed run)")
    h.note("a separate run with timers: in the worker's thread around scan.walk, "
         "Catalog.known_files/record and JobService.add_items/set_items/items (wall and "
         "thread CPU); in the pool, inspect_file is wrapped to time hash_file and "
         "read_metadata (wall and process CPU)")  # fmt: skip
    result = measure_scan(photos.root, "process", sizes.rescans, probe=True)
    first = result["first"]
    wall, cpu = first["wall"], first["cpu_self"] + first["cpu_children"]
    h.note(f"probed wall {wall:.1f} s vs {clean['first']['wall']:.1f} s unprobed "
         f"({h.ratio(wall, clean['first']['wall'])}); CPU {cpu:.1f} s vs "
         f"{clean['first']['cpu_self'] + clean['first']['cpu_children']:.1f} s unprobed; "
         f"load average (1 min) at the end: {first['load']:.1f}")  # fmt: skip
    rows = [[label, w, f"{w / wall:.1%}", c, f"{c / cpu:.1%}", w / n * 1000]
            for label, w, c in split_parts(result)]  # fmt: skip
    rows.append(["total", wall, "100.0%", cpu, "100.0%", wall / n * 1000])
    for label, w, c in coordination_parts(result):
        rows.append([f"  ⊂ {label}", w, f"({w / wall:.1%})", "" if c is None else c,
                     "" if c is None else f"({c / cpu:.1%})", w / n * 1000])  # fmt: skip
    h.table(["part", "wall s", "of wall", "CPU s", "of CPU", "wall ms/file"], rows)
    probe, pool = result["probe_first"], result["concurrency"]
    h.note(f"pool rows: worker-seconds / {pool} (the pool runs {pool} items at once), so the "
         "wall shares add up to the wall time; CPU = user + system of the worker process "
         "and its pool processes. ⊂ rows are inside the coordination share or overlap "
         "the pool's work (the worker's thread writes while the pool reads photos)")  # fmt: skip
    h.note(f"pool busy {probe['item'] / (wall * pool):.0%} of the wall in inspect_file; per item: "
         f"read_metadata {probe['metadata_cpu'] / n * 1000:.1f} ms CPU "
         f"({probe['metadata'] / n * 1000:.1f} ms wall), hash_file "
         f"{probe['hash_cpu'] / n * 1000:.2f} ms CPU")  # fmt: skip
    rescan_split(result, n)
    return result


def rescan_split(result: dict, n: int) -> None:
    probe, rounds = result["probe_rescans"], len(result["rescan"])
    h.heading(f"2b. where a no-change rescan's time goes ({n:,} files, probed, mean of {rounds})")
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
    h.table(["part", "wall ms", "CPU ms", "wall µs/file"], rows)
    empty = statistics.mean(result["empty"]) * 1000
    h.note(f"(the walk and _discover are {sum(measured) / cpu:.0%} of the rescan's CPU; "
         f"a scan of an empty folder took {empty:.1f} ms on average)")  # fmt: skip
