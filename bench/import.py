"""Benchmark a whole import against the bare work it is made of (issue #18).

Run with ``.venv/bin/python -m bench.import [--photos N] [--heics N] [--rounds N]``
(``--quick``: 12 photos, 6 HEICs). It prints, in one run:

1. the photo sets: N 24-MP JPEGs (6000x4000, q90, photo-like) and N iPhone-sized
   HEICs (4032x3024, 512-px grid tiles, a 320-px embedded thumbnail), made once into
   /tmp/pp_bench_import and reused;
2. photos/s of a whole import (scan -> render -> similar) on an empty library, and of
   ``render --force`` over the same library, against a bare two-process loop over the
   same files (``bench/_import_loops.py``: read + BLAKE3, EXIF, one shrink-on-load
   decode, a 1440-px JPEG preview and a 256-px WebP thumbnail). The import and the
   render run in a fresh interpreter with the worker ``--wait`` embeds (every core,
   item threads), timed from the enqueue to the chain's end; ``photo-pipeline import
   DIR --wait`` itself (its start included) is timed too, for reference;
3. the same for the HEICs: the import against a bare pillow-heif loop (full decode);
4. each side's photos per CPU second, and the peak RSS of each pipeline process.

Bare rounds run before and after every measurement and each ratio is against their
mean. The targets (import >= 0.85x the bare loop, render --force >= 0.90x) are on
photos/s; on this shared machine the CPU ratio is the steadier figure: a process with
more busy threads gets a larger share of a loaded machine, so the wall ratio flatters
the pipeline when other work runs (hence VIPS_CONCURRENCY=1 by default).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from argparse import Namespace
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench import _import_loops as loops

ROOT = Path(tempfile.gettempdir()) / "pp_bench_import"
CLI = Path(sys.executable).parent / "photo-pipeline"
PROCESSES = 2


# ── photo sets ─────────────────────────────────────────────────────────────────
def photo_set(kind: str, count: int) -> Path:
    """``count`` photos of ``kind`` ("jpeg" or "heic") in a folder of their own,
    made in parallel where missing."""
    folder = ROOT / f"{kind}-{count}"
    folder.mkdir(parents=True, exist_ok=True)
    write = loops.write_jpeg if kind == "jpeg" else loops.write_heic
    extension = "jpg" if kind == "jpeg" else "heic"
    missing = [
        (str(folder / f"IMG_{n:04d}.{extension}"), n)
        for n in range(count)
        if not (folder / f"IMG_{n:04d}.{extension}").exists()
    ]
    if missing:
        with h.spawn_pool(PROCESSES) as pool:
            list(pool.map(write, *zip(*missing, strict=True)))
    for path in folder.iterdir():  # into the page cache, like a photo read twice
        path.read_bytes()
    return folder


def photos_in(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.iterdir() if not p.name.startswith("."))


# ── the two sides ──────────────────────────────────────────────────────────────
def bare_rate(kind: str, paths: list[str]) -> tuple[float, float]:
    """Photos/s of the bare loop in a warmed-up two-process pool, and its CPU seconds
    per photo."""
    with h.spawn_pool(PROCESSES) as pool:
        h.start_pool(pool, PROCESSES, 0.2, loops.ready)
        pool.submit(loops.timed, kind, paths[0]).result()  # codecs set up
        started = time.perf_counter()
        cpu = sum(pool.map(loops.timed, [kind] * len(paths), paths))
        return len(paths) / (time.perf_counter() - started), cpu / len(paths)


def run_command(home: Path, *args: str) -> tuple[float, float, float, Any]:
    """Run ``photo-pipeline ARGS`` on the library at ``home``: wall seconds, CPU
    seconds and peak RSS (MB) of its process tree, its JSON output (when ARGS ask for
    it)."""
    env = {**os.environ, "PHOTO_PIPELINE_HOME": str(home)}
    env.pop("PHOTO_PIPELINE_DATABASE_URL", None)
    done = h.run_command([str(CLI), *args], env)
    output_json = json.loads(done.stdout) if "--json" in args else None
    return done.wall, done.cpu, done.rss_mb, output_json


def in_child(what: str, folder: Path, home: Path) -> dict[str, Any]:
    """Run ``child(what, ...)`` in a fresh interpreter: its own imports and peak RSS."""
    return h.in_child("import", what, str(folder), str(home))


def child(args: list[str]) -> dict[str, Any]:
    """The command's work without the command: ``import`` (scan -> render -> similar)
    or ``render`` (--force) on the library at ``home``, by a burst worker configured
    like the one ``--wait`` embeds (every core, item threads; the code loaded before
    it kept out of the garbage collector's way, as there). Timed from the enqueue to
    the last job's end."""
    import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the job types)
    from photo_pipeline.cli.common import loaded_code_frozen
    from photo_pipeline.config import Settings
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.pipeline.ingest.imports import import_folders
    from photo_pipeline.pipeline.library import open_library
    from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings

    what, folder, home = args[0], Path(args[1]), Path(args[2])
    settings = Settings.from_env({"PHOTO_PIPELINE_HOME": str(home)})
    lib = open_library(settings)
    config = WorkerConfig(burst=True, concurrency=os.cpu_count() or 1, poll_seconds=0.2)
    for job_type in ("scan", "render", "similar"):
        registry.get(job_type)  # their modules (and decoders) imported, as the bare pool's
    started, cpu = time.perf_counter(), time.process_time()
    if what == "import":
        jobs = import_folders(lib.service, lib.catalog, [folder], follow_up=settings)
    else:
        jobs = [enqueue_render(lib.service, home, render_settings(settings), force=True).job]
    with loaded_code_frozen():
        Worker(lib.service, lib.workers, registry, config).run()
    seconds = time.perf_counter() - started
    cpu = time.process_time() - cpu
    finals = [lib.service.get(job["id"]) for job in jobs]
    lib.close()
    return {
        "seconds": seconds,
        "cpu": cpu,
        "rss_mb": h.peak_rss_mb(),
        "jobs": json.loads(json.dumps(finals, default=str)),
    }


def job_seconds(jobs: list[dict[str, Any]]) -> str:
    """How long each job of a chain ran, for reading where the time went."""
    from datetime import datetime

    parts = []
    for job in jobs:
        started, finished = job.get("started_at"), job.get("finished_at")
        if started and finished:
            span = datetime.fromisoformat(finished) - datetime.fromisoformat(started)
            parts.append(f"{job['job_type']} {span.total_seconds():.2f} s")
    return ", ".join(parts)


def check_succeeded(jobs: list[dict[str, Any]], what: str) -> None:
    bad = [job for job in jobs if job["state"] != "succeeded"]
    if bad:
        raise RuntimeError(f"{what}: {[(j['job_type'], j['state']) for j in bad]}")


class Runs:
    """Rounds of one photo set: each measurement with the mean of the bare rounds
    just before and just after it, in photos per wall second and per CPU second (the
    second does not depend on how much of this shared machine each side got)."""

    def __init__(self, kind: str, folder: Path) -> None:
        self.kind, self.folder, self.paths = kind, folder, photos_in(folder)
        self.bare = [bare_rate(kind, self.paths)]
        self.ratios: dict[str, list[tuple[float, float, float, float]]] = {}
        self.rss: dict[str, list[float]] = {}
        self.notes: list[str] = []

    def add(self, label: str, seconds: float, cpu: float, rss_mb: float) -> None:
        self.bare.append(bare_rate(self.kind, self.paths))
        (rate_a, cpu_a), (rate_b, cpu_b) = self.bare[-2:]
        rate = len(self.paths) / seconds
        per_cpu = len(self.paths) / cpu
        bare_per_cpu = 2 / (cpu_a + cpu_b)
        self.ratios.setdefault(label, []).append(
            (rate, rate / ((rate_a + rate_b) / 2), per_cpu / bare_per_cpu, cpu)
        )
        self.rss.setdefault(label, []).append(rss_mb)

    def round(self, *, force: bool) -> None:
        with tempfile.TemporaryDirectory(prefix="pp-import-") as home:
            done = in_child("import", self.folder, Path(home))
            check_succeeded(done["jobs"], "import")
            self.add("import", done["seconds"], done["cpu"], done["rss_mb"])
            self.notes.append(job_seconds(done["jobs"]))
            if force:
                done = in_child("render", self.folder, Path(home))
                check_succeeded(done["jobs"], "render --force")
                self.add("render --force", done["seconds"], done["cpu"], done["rss_mb"])
        with tempfile.TemporaryDirectory(prefix="pp-import-") as home:
            run_command(Path(home), "init")
            seconds, cpu, rss_mb, jobs = run_command(
                Path(home), "import", str(self.folder), "--wait", "--json"
            )
            check_succeeded(jobs, "photo-pipeline import")
            self.add("photo-pipeline import --wait", seconds, cpu, rss_mb)

    def row(self, label: str, what: str, target: float | None) -> list[Any]:
        """The median round: photos/s, its ratio to the bare loop by wall time and by
        CPU time, its CPU seconds, every round's wall ratio, the target, peak RSS."""
        runs = sorted(self.ratios[label], key=lambda run: run[1])
        rate, wall, cpu, cpu_seconds = runs[len(runs) // 2]
        met = "" if target is None else ("yes" if wall >= target else "NO")
        return [
            what,
            f"{rate:.2f}",
            f"{h.figure(f'{what}: wall ratio', wall):.2f}x",
            f"{h.figure(f'{what}: CPU ratio', cpu):.2f}x",
            f"{cpu_seconds:.1f}",
            " ".join(f"{run[1]:.2f}" for run in self.ratios[label]),
            "" if target is None else f">= {target:.2f}",
            met,
            " / ".join(f"{r:.0f}" for r in self.rss[label]),
        ]

    def bare_summary(self) -> str:
        return " ".join(f"{rate:.2f}/s ({cpu * 1000:.0f} ms CPU)" for rate, cpu in self.bare)


def measured(kind: str, folder: Path, rounds: int, *, force: bool) -> Runs:
    """``rounds`` rounds of ``kind``'s photos in ``folder`` (``force``: with a
    ``render --force`` each)."""
    runs = Runs(kind, folder)
    for _ in range(rounds):
        runs.round(force=force)
    return runs


def body(args: Namespace) -> int:
    if args.quick:
        args.photos, args.heics = 12, 6
    if args.vips_concurrency:
        # On a shared machine, libvips' extra threads win the pipeline a larger share of
        # the CPU than the bare loop's two processes get: a wall ratio that flatters it.
        # At 1, each item has one busy thread, like each bare process.
        os.environ["VIPS_CONCURRENCY"] = str(args.vips_concurrency)
    if not CLI.exists():
        print(f"no {CLI}: install the project into this interpreter's environment")
        return 2

    h.heading("1. photo sets")
    started = time.perf_counter()
    jpegs = photo_set("jpeg", args.photos) if args.photos else None
    heics = photo_set("heic", args.heics) if args.heics else None
    megabytes = {
        name: sum(os.path.getsize(p) for p in photos_in(folder)) / 1e6
        for name, folder in (("jpeg", jpegs), ("heic", heics))
        if folder is not None
    }
    sets = [f"{args.photos} JPEGs 6000x4000 q90 ({megabytes['jpeg']:.0f} MB)"] if jpegs else []
    sets += [f"{args.heics} HEICs 4032x3024 ({megabytes['heic']:.0f} MB)"] if heics else []
    h.note(
        ", ".join(sets) + f", ready in {time.perf_counter() - started:.1f} s; "
        f"VIPS_CONCURRENCY={os.environ.get('VIPS_CONCURRENCY', 'unset')}"
    )

    h.heading(f"2. photos/s against the bare loop over the same files ({args.rounds} round(s))")
    rows = []
    jpeg = measured("jpeg", jpegs, args.rounds, force=True) if jpegs else None
    if jpeg is not None:
        rows += [
            jpeg.row("import", "JPEG import (in-process, empty library)", 0.85),
            jpeg.row("render --force", "JPEG render --force (in-process)", 0.90),
            jpeg.row("photo-pipeline import --wait", "JPEG photo-pipeline import --wait", None),
        ]
    heic = measured("heic", heics, args.rounds, force=False) if heics else None
    if heic is not None:
        rows += [
            heic.row("import", "HEIC import (in-process) / bare pillow-heif", None),
            heic.row("photo-pipeline import --wait", "HEIC photo-pipeline import --wait", None),
        ]
    headers = ["what", "photos/s", "wall ratio", "CPU ratio", "CPU s", "each round (wall)",
               "target", "met", "peak RSS MB"]  # fmt: skip
    h.table(headers, rows)
    runs = [(name, side) for name, side in (("JPEG", jpeg), ("HEIC", heic)) if side]
    h.note("bare rounds, photos/s (CPU per photo): "
         + "; ".join(f"{name} {side.bare_summary()}" for name, side in runs))  # fmt: skip
    h.note("the in-process import's jobs: "
         + "; ".join(f"{name} {' | '.join(side.notes)}" for name, side in runs))  # fmt: skip
    h.note(
        "wall ratio: photos/s against the mean of the bare rounds before and after (the "
        "target); CPU ratio: photos per CPU second of the process tree against the bare "
        "loop's, which load from elsewhere on the machine does not sway; CPU s: the "
        "side's CPU seconds (the command's: its whole process tree). "
        "in-process: enqueue to the chain's end in a fresh interpreter (imports and the "
        "library's opening not timed, as the bare loop's pool start is not); "
        "photo-pipeline import --wait: the command's wall time, its start included; "
        "peak RSS: VmHWM of the in-process child, the command's tree from wait4"
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--photos", type=int, default=48, help="24-MP JPEGs (default 48)")
    parser.add_argument("--heics", type=int, default=24, help="12-MP HEICs (default 24; 0: none)")
    parser.add_argument("--rounds", type=int, default=1, help="rounds of each set (default 1)")
    parser.add_argument("--quick", action="store_true", help="12 photos, 6 HEICs")
    parser.add_argument(
        "--vips-concurrency",
        type=int,
        default=1,
        help="VIPS_CONCURRENCY of the pipeline's processes (default 1; 0: libvips' own, "
        "one thread per core per operation)",
    )
    return h.run(parser, body, argv, child=child)


if __name__ == "__main__":
    sys.exit(main())
