"""The ingest benchmark's photo set (section 0): 12-megapixel JPEGs generated once into
a folder with a manifest, checked and reused on later runs, warmed into the page cache."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import tempfile
import time
from concurrent.futures import as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench import _harness as h
from bench import _photos
from bench._ingest_common import CPUS, MB, WALK

DEFAULT_ROOT = Path(tempfile.gettempdir()) / "pp_bench_ingest"
MANIFEST = ".ingest-photos.json"  # hidden: the scan skips it
PHOTO_BYTES_ESTIMATE = 2_500_000  # a generous upper estimate, for the disk check
DISK_RESERVE = 2 * 1024**3
MIN_PHOTOS = 20
GENERATE_CHUNK = 10


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
    found = {path: fingerprint for path, fingerprint in WALK(str(root))}
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
    with h.spawn_pool(CPUS) as pool:
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
    h.heading(f"0. photos: {count:,} JPEGs of {_photos.SIZE[0]}x{_photos.SIZE[1]} with EXIF")
    h.note(f"in {photos.root}: {total / 1e9:.2f} GB, {statistics.mean(sizes):.2f} MB per photo "
         f"({min(sizes):.2f}–{max(sizes):.2f}); quality {_photos.QUALITY}, a smooth colour "
         f"field + grain (sigma {_photos.GRAIN_SIGMA}), 5 camera models, 2015–2024 dates, "
         "6 UTC offsets, 40 % with GPS, 20 % rotated; folders YYYY/MM")  # fmt: skip
    if photos.generated_s is None:
        h.note("reused from an earlier run (complete and unchanged)")
    else:
        h.note(f"generated in {photos.generated_s:.0f} s with {CPUS} processes "
             f"({count / photos.generated_s:.1f} photos/s)")  # fmt: skip
    for message in photos.notes:
        h.note(f"NOTE: {message}")
    seconds = warm_cache(photos.paths())
    h.note(f"read once more to fill the page cache: {seconds:.1f} s ({total / MB / seconds:,.0f} "
         "MB/s). Caches are not dropped (we cannot do it safely here), so every number below "
         "is with the photos in RAM: CPU-bound hashing and decoding, no disk reads")  # fmt: skip
    available = memory_available()
    if available and total > 0.6 * available:
        h.note(f"NOTE: the set ({total / 1e9:.1f} GB) is large for the {available / 1e9:.1f} GB "
             "of available memory: part of it may be read from disk")  # fmt: skip
