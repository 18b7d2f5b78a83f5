"""Benchmark videos: metadata files/s and poster frames/s against a bare PyAV loop.

Run with ``.venv/bin/python -m bench.video [--quick]``. It prints, in one run:

0. the clip set: N 1080p H.264 and N 1080p HEVC MP4s (30 fps, a keyframe a second like
   a phone, a moving gradient with noise so the encoders have real work), made once into
   /tmp/pp_bench_video and reused;
1. for each codec, on 2 worker processes (the machine's 2 cores), files per second of
   (a) ``read_metadata`` vs a bare PyAV loop that opens the file and reads the same
       fields (size, codec, duration, rate, container tags); every clip 25 times;
       also ``read_metadata(isolate_video=True)``, the probe in a killable child;
   (b) ``poster_frame`` (forked, time-limited child; seek to min(1 s, 10%), decode,
       turn, scale to 1440 px RGB) vs a bare PyAV loop doing the same seek, decode and
       scale in-process;
   (c) ``render_file`` (poster + 256/1440 WebP renditions + pHash), for scale;
2. CPU milliseconds per file (the worker's and its forked children's), and the peak RSS
   of every worker process and of the largest forked decode child.

Each configuration runs in a fresh process; rounds interleave configurations and the
best round counts (this machine is shared). Target: ours >= 0.8x the bare loop.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
from argparse import Namespace
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

from bench import _harness as h

ROOT = Path(tempfile.gettempdir()) / "pp_bench_video"
SIZE = (1920, 1080)
FPS = 30
SECONDS = 4
PREVIEW = 1440
WORKERS = 2
METADATA_PASSES = 25  # a probe takes about a millisecond: repeat it to measure it
ENCODERS = {
    "h264": ("libx264", {"preset": "veryfast", "g": "30"}),
    "hevc": ("libx265", {"preset": "ultrafast", "x265-params": "log-level=error:keyint=30"}),
}


# ── clips ──────────────────────────────────────────────────────────────────────
def make_clip(target: Path, codec: str, seed: int) -> None:
    import av
    import numpy as np

    encoder, options = ENCODERS[codec]
    rng = np.random.default_rng(seed)
    width, height = SIZE
    x = np.arange(width, dtype=np.int32)[None, :, None]
    y = np.arange(height, dtype=np.int32)[:, None, None]
    base = rng.integers(0, 255, 3, dtype=np.int32)
    partial = target.with_name(f".{target.name}.partial")
    with av.open(str(partial), "w", format="mp4") as container:
        container.metadata["creation_time"] = "2023-07-14T08:15:30.000000Z"
        stream: Any = container.add_stream(encoder, rate=FPS, options=options)
        stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
        noise = rng.integers(0, 24, (height, width, 1), dtype=np.int32)
        for index in range(SECONDS * FPS):
            pixels = (base + x // 4 + y // 3 + index * 3 + noise) % 256
            frame = np.broadcast_to(pixels, (height, width, 3)).astype(np.uint8)
            noise = np.roll(noise, 7, axis=1)
            container.mux(stream.encode(av.VideoFrame.from_ndarray(frame, format="rgb24")))
        container.mux(stream.encode(None))
    os.replace(partial, target)


def make_clips(count: int) -> dict[str, list[str]]:
    clips: dict[str, list[str]] = {}
    for codec in ENCODERS:
        folder = ROOT / codec
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for index in range(count):
            target = folder / f"VID_{index:03d}.mp4"
            if not target.exists():
                make_clip(target, codec, index)
            paths.append(str(target))
        clips[codec] = paths
    return clips


# ── the work, per file (runs in a pool worker) ─────────────────────────────────
def ours_metadata(path: str) -> None:
    from photo_pipeline.media import read_metadata

    read_metadata(Path(path))


def ours_metadata_isolated(path: str) -> None:
    from photo_pipeline.media import read_metadata

    read_metadata(Path(path), isolate_video=True)


def bare_metadata(path: str) -> None:
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]
        _ = (stream.codec_context.width, stream.codec_context.height, stream.codec_context.name)
        _ = (stream.duration, stream.time_base, stream.average_rate, dict(container.metadata))


def ours_poster(path: str) -> None:
    from photo_pipeline.media.poster import poster_frame

    poster_frame(path, max_size=PREVIEW, max_pixels=200_000_000, time_limit=60)


def bare_poster(path: str) -> None:
    import av

    with av.open(path) as container:
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        duration = float(stream.duration * stream.time_base)
        target = min(1.0, duration / 10)
        container.seek(int(target / stream.time_base), stream=stream)
        for frame in container.decode(stream):
            if frame.time >= target - 1e-3:
                scale = PREVIEW / max(frame.width, frame.height)
                frame.reformat(
                    width=round(frame.width * scale),
                    height=round(frame.height * scale),
                    format="rgb24",
                    interpolation="AREA",
                ).to_ndarray()
                return


def ours_render(path: str) -> None:
    from photo_pipeline.media.render import RenderSettings, render_file

    render_file(path, RenderSettings())


WORK = {
    "metadata ours": ours_metadata,
    "metadata ours isolated": ours_metadata_isolated,
    "metadata bare": bare_metadata,
    "poster ours": ours_poster,
    "poster bare": bare_poster,
    "render ours": ours_render,
}


def _peaks(_: int) -> tuple[float, float]:
    """(this worker's VmHWM, the largest forked child's max RSS), in MB."""
    return h.peak_rss_mb(), resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def _warm(_: int) -> None:
    import av  # noqa: F401

    import photo_pipeline.media.render  # noqa: F401


def _measured(what: str, path: str) -> float:
    """CPU seconds of one file's work, its forked decode children's included."""
    before = h.cpu_seconds()
    WORK[what](path)
    return h.cpu_seconds() - before


def child(args: list[str]) -> dict[str, Any]:
    what, paths = args[0], args[1:]
    tasks = paths * METADATA_PASSES if what.startswith("metadata") else paths
    with ProcessPoolExecutor(WORKERS) as pool:
        list(pool.map(_warm, range(WORKERS)))  # imports are not what is measured
        started = time.perf_counter()
        chunk = max(1, len(tasks) // (WORKERS * 4))
        cpu = sum(pool.map(_measured, [what] * len(tasks), tasks, chunksize=chunk))
        seconds = time.perf_counter() - started
        peaks = list(pool.map(_peaks, range(WORKERS * 4)))
    return {
        "files": len(tasks),
        "seconds": seconds,
        "cpu": cpu,
        "worker_rss_mb": max(p[0] for p in peaks),
        "decode_child_rss_mb": max(p[1] for p in peaks),
    }


def body(args: Namespace) -> None:
    count = 4 if args.quick else 10
    repeat = args.repeat or (1 if args.quick else 3)
    h.heading("0. clips")
    started = time.perf_counter()
    clips = make_clips(count)
    megabytes = sum(os.path.getsize(p) for paths in clips.values() for p in paths) / 1e6
    h.note(
        f"{count} H.264 + {count} HEVC MP4s, {SIZE[0]}x{SIZE[1]}, {SECONDS} s at {FPS} fps, "
        f"{megabytes:.0f} MB, ready in {time.perf_counter() - started:.1f} s; "
        f"{WORKERS} worker processes"
    )
    for paths in clips.values():
        for path in paths:
            Path(path).read_bytes()  # into the page cache

    h.heading(f"1. files per second on {WORKERS} workers, best of {repeat}")
    cases = {
        (codec, what): lambda w=what, p=paths: h.in_child("video", w, *p)
        for codec, paths in clips.items()
        for what in WORK
    }
    runs: dict[tuple[str, str], dict[str, Any]] = {}
    for key, done in h.alternate(cases, repeat).items():
        for run in done:
            run["rate"] = run["files"] / run["seconds"]
        runs[key] = h.best(done, key=lambda r: r["rate"])
    rows = [
        [codec, what, run["files"], run["seconds"], run["rate"], run["cpu"] / run["files"] * 1000,
         f"{run['worker_rss_mb']:.0f}",
         f"{run['decode_child_rss_mb']:.0f}" if "ours" in what else "-"]
        for (codec, what), run in runs.items()
    ]  # fmt: skip
    h.table(["codec", "what", "files", "seconds", "files/s", "CPU ms/file", "worker RSS MB",
             "decode child MB"], rows)  # fmt: skip

    h.heading("2. ratios (target: ours >= 0.8x the bare PyAV loop)")
    rows = []
    for ours, bare in (
        ("metadata ours", "metadata bare"),
        ("metadata ours isolated", "metadata bare"),
        ("poster ours", "poster bare"),
    ):
        mine, theirs = [runs[c, ours] for c in clips], [runs[c, bare] for c in clips]
        rows.append([
            f"{ours} / {bare}",
            *(h.ratio(a["rate"], b["rate"], name=f"{c} {ours}, files/s")
              for c, a, b in zip(clips, mine, theirs, strict=True)),
            *(h.ratio(a["files"] / a["cpu"], b["files"] / b["cpu"], name=f"{c} {ours}, per CPU-s")
              for c, a, b in zip(clips, mine, theirs, strict=True)),
        ])  # fmt: skip
    h.table(["ratio", "h264 files/s", "hevc files/s", "h264 per CPU-s", "hevc per CPU-s"], rows)
    h.note(
        "files/s is wall clock on a machine shared with others; per CPU-s counts the CPU "
        "time of the worker and its forked decode children, which other load disturbs less. "
        "poster ours = fork a watchdogged child per clip, seek, decode, turn, scale to "
        f"{PREVIEW} px; bare = the same seek/decode/scale in the worker itself. "
        "worker RSS = each pool process's VmHWM; decode child = the largest forked "
        "child's max RSS (it shares the worker's pages until it writes them)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = h.parser(__doc__)
    parser.add_argument("--quick", action="store_true", help="4 clips per codec, not 10")
    parser.add_argument("--repeat", type=int, default=None, help="rounds (default 3, quick 1)")
    return h.run(parser, body, argv, child=child)


if __name__ == "__main__":
    sys.exit(main())
