"""The bare floors of ``bench.library``'s phases: each phase's essential work on the
same files, with nothing of the pipeline around it (no database, no jobs, no journal).

* import: ``python -m bench._library_floors FOLDER`` runs, in a two-process spawned
  pool of its own (as ``bench._import_loops`` does for one kind of photo), per file:
  read + BLAKE3, then by its kind: a JPEG's shrink-on-load decode and a HEIC's full
  decode with their two encodes (``bench._import_loops.bare_jpeg`` / ``bare_heic``),
  a PNG decoded by Pillow, a video's first frame decoded by PyAV, a DNG's half-size
  LibRaw demosaic (rawpy), each then encoded as a 1440-px JPEG and a 256-px WebP. A
  file that does not decode counts as done (its read and hash were the work). It
  prints JSON: its pool's start and its loop's seconds, its CPU seconds by suffix.
* organize --move: ``move`` below, in this process: per file (four at a time, as
  organize places them) read + BLAKE3 (organize checks the bytes against the
  catalogued hash), a hard link at the destination, its folder fsynced, the source
  unlinked, its folder fsynced: as durable as organize's move (the new name on disk
  before the old one goes), with nothing else (no parking rename, no journal).
* verify: ``bench.organize.blake3_pass`` over the organized files (64 KiB reads into
  one buffer, one thread).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MOVE_THREADS = 4  # files organize places at once (bench.organize.DURABLE_THREADS)


def files_below(folder: Path) -> list[Path]:
    """Every file below ``folder`` whose name is not hidden, sorted."""
    return sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))


# ── import ─────────────────────────────────────────────────────────────────────
def _bare_frame(path: str) -> int:
    import av

    from bench._import_loops import _encode_both, _read_and_hash

    _read_and_hash(path)
    with av.open(path) as container:
        frame = next(container.decode(video=0))
        return _encode_both(frame.to_image())  # type: ignore[no-untyped-call]


def _bare_raw(path: str) -> int:
    import rawpy
    from PIL import Image

    from bench._import_loops import _encode_both, _read_and_hash

    data = _read_and_hash(path)
    with rawpy.imread(io.BytesIO(data)) as raw:
        pixels = raw.postprocess(half_size=True, use_camera_wb=True)
    return _encode_both(Image.fromarray(pixels))


def _bare_png(path: str) -> int:
    from PIL import Image

    from bench._import_loops import _encode_both, _read_and_hash

    data = _read_and_hash(path)
    with Image.open(io.BytesIO(data)) as image:
        return _encode_both(image.convert("RGB"))


def bare(path: str) -> tuple[str, float]:
    """The essential work of one file; its suffix and the CPU seconds it took."""
    from bench._import_loops import _read_and_hash, bare_heic, bare_jpeg

    started = time.process_time()
    suffix = Path(path).suffix.lower()
    work = {".jpg": bare_jpeg, ".jpeg": bare_jpeg, ".heic": bare_heic, ".png": _bare_png,
            ".mp4": _bare_frame, ".mov": _bare_frame, ".dng": _bare_raw}  # fmt: skip
    # A broken file: its read and hash were the work.
    with contextlib.suppress(Exception):
        work.get(suffix, _read_and_hash)(path)
    return suffix, time.process_time() - started


def ready(delay: float) -> int:
    import av  # noqa: F401
    import rawpy  # noqa: F401

    from bench._import_loops import ready

    return ready(delay)


def main(argv: list[str]) -> int:
    from bench import _harness as h

    (folder,) = argv
    started = time.perf_counter()
    paths = [str(p) for p in files_below(Path(folder))]
    with h.spawn_pool(2) as pool:
        h.start_pool(pool, 2, 0.0, ready)
        looped = time.perf_counter()
        by_kind: dict[str, float] = {}
        for suffix, seconds in pool.map(bare, paths, chunksize=4):
            by_kind[suffix] = by_kind.get(suffix, 0.0) + seconds
        ended = time.perf_counter()
    times = {"start": looped - started, "loop": ended - looped, "cpu": sum(by_kind.values())}
    print(json.dumps({**times, "cpu_by_suffix": by_kind}))
    return 0


# ── organize --move ────────────────────────────────────────────────────────────
def _fsync_folder(folder: Path) -> None:
    descriptor = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def move(source: Path, dest: Path) -> int:
    """Move every file of ``source`` below ``dest`` (same layout) as described above;
    returns the files moved."""
    from bench.organize import blake3_pass

    files = files_below(source)
    targets = {path: dest / path.relative_to(source) for path in files}
    for folder in sorted({t.parent for t in targets.values()}):
        folder.mkdir(parents=True, exist_ok=True)

    def one(path: Path) -> None:
        blake3_pass([path])
        os.link(path, targets[path])
        _fsync_folder(targets[path].parent)
        os.unlink(path)
        _fsync_folder(path.parent)

    with ThreadPoolExecutor(MOVE_THREADS) as pool:
        list(pool.map(one, files))
    return len(files)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
