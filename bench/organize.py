"""Benchmark organize: a copy-mode ``organize`` end to end against a durable copy
(and against ``cp -r`` plus a BLAKE3 pass) of the same files, on the same disk, in
one run.

Run with ``.venv/bin/python -m bench.organize [--files 300] [--mb 3] [--rounds 2]``.

0. The photo set: ``--files`` JPEGs of about ``--mb`` MB each (random-noise pixels at
   quality 95, so they do not compress; a handful of capture days, so the layout has
   several folders), made once into /tmp/pp_bench_organize and reused. Every file is
   one of a few base photos with its index in a JPEG comment: unique content, cheap to
   make.
1. Per round, the phases in turns (A B C, then C B A: each first as often as last),
   each after an ``os.sync()`` (so that no phase pays for the dirty pages of the one
   before):
   - durable baseline, as durable as organize: each file copied (``copy_file_range``
     through ``shutil.copyfile``) to a hidden name, fsynced, renamed into place, read
     back and BLAKE3-hashed, four files at a time (as organize places them); then each
     folder fsynced once. The target is organize >= 0.90x of it;
   - baseline: ``cp -r SRC OUT`` then a single-threaded BLAKE3 pass (64 KiB reads) over
     every copy;
   - organize: a fresh library (SQLite, its home beside the set) has the set scanned
     in-process (not timed), then ``photo-pipeline organize --dest DEST --wait --json``
     runs as a command, timed from start to exit (interpreter start-up, plan, journal,
     the job with its embedded worker, the report). Copy is organize's default mode.
   The ratios printed are baseline seconds / organize seconds (1.00x: as fast as the
   baseline), medians and min–max of the rounds, for the command and for the job's
   own run time (claim to finish, from the job row). CPU seconds (user + system, children
   included) are shown beside each: on a loaded machine they vary less than wall
   time.

Everything reads from the page cache (the set was just written or scanned); organize
also fsyncs every file and folder it writes, which ``cp -r`` does not: the time of a
``sync`` right after the baseline is shown too, and the ratios against the baseline
with it (the copies on disk, as organize leaves them). The machine is
small and shared: read the ratios of one run, rounds interleaved.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from argparse import Namespace
from datetime import datetime
from pathlib import Path
from typing import Any

from bench import _harness as h

ROOT = Path(tempfile.gettempdir()) / "pp_bench_organize"
BASES = 6  # distinct photos (and capture days) the set is made of
# The baseline reads as organize hashes: 64 KiB into one reused buffer, which takes
# half the CPU of 1 MiB reads (media/hashing.py).
CHUNK = 64 << 10
DURABLE_THREADS = 4  # files organize places at once (pipeline/organize)


# ── the photo set ──────────────────────────────────────────────────────────────
def base_photo(index: int, megabytes: float) -> bytes:
    """A noise JPEG of about ``megabytes`` MB with a capture time of its own."""
    import io

    from PIL import Image
    from tests.factories.photos import build_exif

    # Noise at quality 95 takes about 1.1 bytes per pixel.
    pixels = int(megabytes * 1_000_000 / 1.1)
    width = int((pixels * 4 / 3) ** 0.5)
    height = pixels // width
    rnd = random.Random(index)
    image = Image.frombytes("RGB", (width, height), rnd.randbytes(width * height * 3))
    out = io.BytesIO()
    taken = f"2022:{1 + index % 12:02d}:{1 + index:02d} 10:00:00"
    image.save(out, "JPEG", quality=95, exif=build_exif(taken=taken))
    return out.getvalue()


def with_comment(jpeg: bytes, text: str) -> bytes:
    """``jpeg`` with a COM segment right after SOI: the same photo, other bytes."""
    payload = text.encode()
    segment = b"\xff\xfe" + (len(payload) + 2).to_bytes(2, "big") + payload
    return jpeg[:2] + segment + jpeg[2:]


def make_set(files: int, megabytes: float) -> Path:
    folder = ROOT / f"photos-{files}x{megabytes:g}mb"
    done = folder / ".complete"
    if done.exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    bases = [base_photo(i, megabytes) for i in range(BASES)]
    for n in range(files):
        target = folder / f"card{n % 3}" / f"IMG_{n:05d}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(with_comment(bases[n % BASES], f"bench photo {n}"))
    done.touch()
    return folder


def set_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jpg"))


# ── the baseline ───────────────────────────────────────────────────────────────
def blake3_pass(files: list[Path]) -> None:
    import blake3

    buffer = memoryview(bytearray(CHUNK))
    for path in files:
        hasher = blake3.blake3()
        with open(path, "rb", buffering=0) as f:
            while read := f.readinto(buffer):
                hasher.update(buffer[:read])
        hasher.hexdigest()


def baseline(source: Path, out: Path) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds) of ``cp -r`` and a BLAKE3 pass over the copies,
    and the seconds of a ``sync`` right after them: what writing the copies to disk
    adds, which organize pays (it fsyncs every copy) and ``cp -r`` does not."""
    shutil.rmtree(out, ignore_errors=True)
    os.sync()
    cpu, started = h.cpu_seconds(), time.perf_counter()
    subprocess.run(["cp", "-r", str(source), str(out)], check=True)
    blake3_pass(set_files(out))
    elapsed = time.perf_counter() - started
    cpu = h.cpu_seconds() - cpu
    started = time.perf_counter()
    os.sync()
    synced = time.perf_counter() - started
    shutil.rmtree(out)
    return elapsed, cpu, synced


def durable_copy(source: Path, out: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of copying every file of ``source`` below ``out``
    as durably as organize does: copy under a hidden name, fsync, rename, read back
    and BLAKE3 it (``DURABLE_THREADS`` files at a time), then fsync every folder
    written."""
    from concurrent.futures import ThreadPoolExecutor

    shutil.rmtree(out, ignore_errors=True)
    files = set_files(source)
    os.sync()
    cpu, started = h.cpu_seconds(), time.perf_counter()
    folders = {out / path.parent.relative_to(source) for path in files}
    for folder in sorted(folders):
        folder.mkdir(parents=True, exist_ok=True)

    def copy(path: Path) -> None:
        target = out / path.relative_to(source)
        partial = target.with_name(f".{target.name}.partial")
        shutil.copyfile(path, partial)
        descriptor = os.open(partial, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.replace(partial, target)
        blake3_pass([target])

    with ThreadPoolExecutor(DURABLE_THREADS) as pool:
        list(pool.map(copy, files))
    for folder in sorted(folders | {out}):
        descriptor = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
    elapsed = time.perf_counter() - started
    cpu = h.cpu_seconds() - cpu
    shutil.rmtree(out)
    return elapsed, cpu


# ── organize ───────────────────────────────────────────────────────────────────
def environment(home: Path) -> dict[str, str]:
    return h.child_env(
        PHOTO_PIPELINE_HOME=str(home),
        PHOTO_PIPELINE_DATABASE_URL=f"sqlite:///{home / 'library.db'}",
    )


def scan(home: Path, source: Path) -> None:
    """Catalogue ``source`` in a fresh library with the scan job alone."""
    env = environment(home)
    code = (
        "from pathlib import Path\n"
        "from photo_pipeline.db import open_database\n"
        "from tests.support.photo_jobs import scan_folders\n"
        f"scan_folders(open_database({env['PHOTO_PIPELINE_DATABASE_URL']!r}), "
        f"Path({str(source)!r}))\n"
    )
    subprocess.run([sys.executable, "-c", code], env=env, check=True, cwd=h.REPO)


def organize(source: Path, work: Path, files: int) -> tuple[float, float, float]:
    """(seconds of the command, seconds of the job, CPU seconds of the command) for
    one copy-mode organize."""
    shutil.rmtree(work, ignore_errors=True)
    home, dest = work / "home", work / "organized"
    home.mkdir(parents=True)
    subprocess.run(
        [sys.executable, "-m", "photo_pipeline", "init"],
        env=environment(home),
        check=True,
        capture_output=True,
    )
    scan(home, source)
    os.sync()
    command = [sys.executable, "-m", "photo_pipeline", "organize", "--dest", str(dest)]
    cpu, started = h.cpu_seconds(), time.perf_counter()
    done = subprocess.run(
        [*command, "--wait", "--json"], env=environment(home), capture_output=True, text=True
    )
    elapsed = time.perf_counter() - started
    cpu = h.cpu_seconds() - cpu
    if done.returncode != 0:
        raise SystemExit(f"organize exited {done.returncode}: {done.stderr[-2000:]}")
    result = json.loads(done.stdout)
    placed = result["report"]["states"].get("done", 0)
    if placed != files:
        raise SystemExit(f"organize placed {placed} of {files} files: {result['report']}")
    job = result["job"]
    ran = (
        datetime.fromisoformat(job["finished_at"]) - datetime.fromisoformat(job["started_at"])
    ).total_seconds()
    shutil.rmtree(work)
    return elapsed, ran, cpu


def body(args: Namespace) -> None:
    h.heading("organize (copy) against a durable copy, and against cp -r + BLAKE3")
    source = make_set(args.files, args.mb)
    total = sum(p.stat().st_size for p in set_files(source))
    h.note(f"{args.files} photos, {total / 1e6:,.0f} MB in {source} (disk: same for all phases)")
    loads: list[str] = []

    def with_load(call: Any) -> Any:
        result = call()
        loads.append(" / ".join(f"{v:.1f}" for v in os.getloadavg()))
        return result

    runs = h.alternate(
        {
            "durable": lambda: with_load(lambda: durable_copy(source, ROOT / "durable-out")),
            "baseline": lambda: with_load(lambda: baseline(source, ROOT / "cp-out")),
            "organize": lambda: with_load(
                lambda: organize(source, ROOT / "organize-run", args.files)
            ),
        },
        args.rounds,
        order="mirror",
    )
    rounds = list(zip(runs["durable"], runs["baseline"], runs["organize"], strict=True))
    rows = [
        [n, f"{durable:.2f}", f"{base:.2f}", f"{synced:.2f}", f"{command:.2f}", f"{job:.2f}",
         f"{durable_cpu:.1f} / {base_cpu:.1f} / {command_cpu:.1f}", f"{total / 1e6 / job:.0f}",
         h.ratio(durable, command), h.ratio(durable, job), h.ratio(base, command),
         " | ".join(loads[3 * (n - 1) : 3 * n])]
        for n, ((durable, durable_cpu), (base, base_cpu, synced), (command, job, command_cpu))
        in enumerate(rounds, 1)
    ]  # fmt: skip
    h.table(["round", "durable s", "cp -r + b3 s", "then sync s", "organize s", "job s",
             "CPU s (durable / cp / organize)", "job MB/s", "command / durable",
             "job / durable", "command / cp", "load after each"], rows)  # fmt: skip

    def spread(name: str, bases: list[float], ours: list[float]) -> str:
        ratios = [b / o for b, o in zip(bases, ours, strict=True)]
        h.figure(name, statistics.median(ratios))
        return f"{statistics.median(ratios):.2f}x ({min(ratios):.2f}–{max(ratios):.2f})"

    durables = [d[0] for d in runs["durable"]]
    commands = [o[0] for o in runs["organize"]]
    jobs = [o[1] for o in runs["organize"]]
    bases = [b[0] for b in runs["baseline"]]
    synced = [b[0] + b[2] for b in runs["baseline"]]
    h.note(
        "median (min–max) of each round's ratio, baseline / organize: against the durable "
        f"copy: command {spread('command / durable', durables, commands)}, job "
        f"{spread('job / durable', durables, jobs)} (target >= 0.90x); against "
        f"cp -r + b3: command {spread('command / cp', bases, commands)}, job "
        f"{spread('job / cp', bases, jobs)}; against cp -r + b3 + sync: command "
        f"{spread('command / cp + sync', synced, commands)}"
    )
    h.note(
        "the durable copy runs in this process (no interpreter start); organize is timed "
        "as a command (start-up included) and as its job's own run"
    )


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--files", type=int, default=300)
    parser.add_argument("--mb", type=float, default=3.0, help="size of each photo")
    parser.add_argument("--rounds", type=int, default=3)
    return h.run(parser, body, argv)


if __name__ == "__main__":
    sys.exit(main())
