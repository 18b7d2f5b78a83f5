"""The generated library of ``bench.library``: a realistic mix of files, a pure
function of (count, seed), written once into a cache folder and reused.

The mix (shares of ``count``, rounded; the JPEGs take what is left):

* JPEGs from cameras and phones, 2–24 MP, most of them 5–12 MP (``bench._photos``'
  photo-like field + grain, so they weigh what real ones do: ~1.7 MB at 12 MP), with
  EXIF (dates over ten years, five cameras, some GPS and turns: ``photo_spec``);
* HEICs as an iPhone writes them (pillow-heif, 12 MP or 3 MP, x265 ``ultrafast`` so
  that the set is made in minutes), with EXIF;
* PNG screenshots (phone and desktop sizes, flat shapes; no EXIF: undated);
* short videos (3 s, 640x360 H.264: MP4s, and iPhone-style MOVs with Apple's keys,
  ``tests.factories.videos``);
* a few DNGs (``tests.factories.photos.dng``: an uncompressed Bayer DNG that LibRaw
  opens, 1.5 MP of 16-bit noise; RAW-like, not a real camera's);
* exact duplicates: byte copies of earlier files in other folders (a backup, a
  download with a copy-looking name);
* near copies: JPEGs resized to half or re-encoded at quality 70, with the EXIF;
* 3% broken: JPEGs cut at 60% (header intact: only a decode tells), random bytes
  named .jpg/.heic/.mp4, empty files.

``manifest.json`` beside the files lists each one: its path (relative), kind, role
(original, duplicate, near, broken), size and BLAKE3. ``.complete`` marks a finished
set. The files are written by a two-process pool (module-level functions, so that
spawned processes import them by name).
"""

from __future__ import annotations

import json
import os
import random
import shutil
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SHARES = {"broken": 0.03, "duplicate": 0.06, "near": 0.03, "video": 0.03, "dng": 0.01,
          "png": 0.09, "heic": 0.09}  # fmt: skip
# JPEG sizes and how often each comes up: phones and older cameras at 5–12 MP, a few
# 24-MP full-frame shots, some 2-MP downloads.
JPEG_SIZES = (
    ((1632, 1224), 0.15),
    ((2592, 1944), 0.20),
    ((3264, 2448), 0.22),
    ((4000, 3000), 0.25),
    ((4608, 3456), 0.10),
    ((6000, 4000), 0.08),
)
HEIC_SIZES = (((4032, 3024), 0.4), ((2016, 1512), 0.6))
SCREENS = ((1170, 2532), (1920, 1080), (2560, 1440))
VIDEO_SIZE, VIDEO_SECONDS, VIDEO_FPS = (640, 360), 3.0, 30
DNG_SIZE = (1536, 1024)
VERSION = 1  # of the generator: a set made by another version is made again


@dataclass
class Entry:
    relative: str
    kind: str  # jpeg, heic, png, video, dng
    role: str  # original, duplicate, near, broken
    index: int
    size: tuple[int, int] = (0, 0)
    of: str | None = None  # duplicate, near, truncated: the original it comes from
    how: str = ""  # near: resized | q70; broken: truncated | garbage | empty
    bytes: int = 0
    blake3: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _weighted(rnd: random.Random, choices: tuple[tuple[Any, float], ...]) -> Any:
    return rnd.choices([c for c, _ in choices], [w for _, w in choices])[0]


def plan(count: int, seed: int) -> list[Entry]:
    """Every file of the set, originals first (derived files name an original)."""
    from bench._photos import photo_spec

    rnd = random.Random(seed)
    counts = {kind: round(count * share) for kind, share in SHARES.items()}
    counts["jpeg"] = count - sum(counts.values())
    entries: list[Entry] = []
    for n in range(counts["jpeg"]):
        spec = photo_spec(seed * 1_000_000 + n)
        year, month, name = spec.relative.split("/")
        card = ("DCIM/100CANON", "DCIM/101NIKON", "Phone/Camera", "Camera Uploads")[n % 4]
        entries.append(Entry(f"{card}/{year}-{month}/{name}", "jpeg", "original", n,
                             _weighted(rnd, JPEG_SIZES), extra={"exif": spec.exif}))  # fmt: skip
    for n in range(counts["heic"]):
        entries.append(Entry(f"iPhone/{2019 + n % 6}/IMG_{n:05d}.HEIC", "heic", "original", n,
                             _weighted(rnd, HEIC_SIZES)))  # fmt: skip
    for n in range(counts["png"]):
        entries.append(Entry(f"Screenshots/Screenshot {n:05d}.png", "png", "original", n,
                             rnd.choice(SCREENS)))  # fmt: skip
    for n in range(counts["video"]):
        suffix = ".MOV" if n % 2 else ".mp4"
        entries.append(Entry(f"Videos/VID_{n:05d}{suffix}", "video", "original", n, VIDEO_SIZE))
    for n in range(counts["dng"]):
        entries.append(Entry(f"RAW/IMG_{n:05d}.dng", "dng", "original", n, DNG_SIZE))
    originals = list(entries)
    jpegs = [e for e in originals if e.kind == "jpeg"]
    taken = {e.relative for e in entries}
    for n in range(counts["duplicate"]):
        source = rnd.choice(originals)
        stem, dot, suffix = Path(source.relative).name.rpartition(".")
        relative = f"Backup/{source.relative}" if n % 3 else f"Downloads/{stem} (1){dot}{suffix}"
        if relative in taken:
            relative = f"Backup/again-{n}/{source.relative}"
        taken.add(relative)
        entries.append(Entry(relative, source.kind, "duplicate", n, source.size, source.relative))
    for n in range(counts["near"]):
        source = rnd.choice(jpegs)
        how = ("resized", "q70")[n % 2]
        relative = f"Edits/{Path(source.relative).stem}_{how}_{n}.jpg"
        entries.append(Entry(relative, "jpeg", "near", n, source.size, source.relative, how))
    for n in range(counts["broken"]):
        how = ("truncated", "truncated", "garbage", "empty")[n % 4]
        if how == "truncated":
            source = rnd.choice(jpegs)
            entries.append(Entry(f"Broken/cut_{n:04d}.jpg", "jpeg", "broken", n, source.size,
                                 source.relative, how))  # fmt: skip
        else:
            suffix = (".jpg", ".HEIC", ".mp4")[n % 3]
            entries.append(Entry(f"Broken/bad_{n:04d}{suffix}", "jpeg", "broken", n, how=how))
    return entries


# ── writers (in pool processes) ────────────────────────────────────────────────
def _save(image: Any, target: Path, **options: Any) -> None:
    from bench._photos import save_whole

    target.parent.mkdir(parents=True, exist_ok=True)
    save_whole(image, target, **options)


def _write_original(root: str, entry: Entry) -> None:
    from tests.factories import photos, videos
    from tests.factories.photos import build_exif

    from bench._photos import QUALITY, picture

    target = Path(root, entry.relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    if entry.kind == "jpeg":
        exif = build_exif(**entry.extra["exif"])
        _save(picture(entry.index, entry.size), target, format="JPEG", quality=QUALITY, exif=exif)
    elif entry.kind == "heic":
        import pillow_heif

        exif = build_exif(
            taken=f"{2019 + entry.index % 6}:{1 + entry.index % 12:02d}:{1 + entry.index % 28:02d}"
            " 12:00:00",
            make="Apple",
            model="iPhone 13 Pro",
            orientation=6 if entry.index % 4 == 0 else 1,
        )
        partial = target.with_name(f".{target.name}.partial")
        pillow_heif.from_pillow(picture(500_000 + entry.index, entry.size)).save(
            partial,
            format="HEIF",
            quality=60,
            exif=exif.tobytes(),
            thumbnails=[320],
            enc_params={"preset": "ultrafast"},
        )
        os.replace(partial, target)
    elif entry.kind == "png":
        _save(_screenshot(entry.index, entry.size), target, format="PNG")
    elif entry.kind == "video":
        day = f"{2018 + entry.index % 7}-{1 + entry.index % 12:02d}-{1 + entry.index % 28:02d}"
        options: dict[str, Any] = {"size": entry.size, "seconds": VIDEO_SECONDS, "fps": VIDEO_FPS,
                   "seed": entry.index}  # fmt: skip
        if target.suffix == ".MOV":
            videos.iphone_mov(target, codec="libx264", creation_time=f"{day}T10:00:00.000000Z",
                              creationdate=f"{day}T12:00:00+0200", **options)  # fmt: skip
        else:
            videos.h264_mp4(target, metadata={"creation_time": f"{day}T09:30:00.000000Z"},
                            **options)  # fmt: skip
    elif entry.kind == "dng":
        photos.dng(target, size=entry.size, seed=entry.index, taken="2021:05:06 07:08:09")


def _screenshot(index: int, size: tuple[int, int]) -> Any:
    """A screen: a flat background, a bar, cards and lines of 'text' (flat colours
    compress as real screenshots do)."""
    from PIL import Image, ImageDraw

    rnd = random.Random(f"screen-{index}")
    width, height = size
    image = Image.new("RGB", size, tuple(rnd.randrange(200, 256) for _ in "rgb"))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, 0, width, height // 14), fill=tuple(rnd.randrange(256) for _ in "rgb"))
    for _ in range(rnd.randrange(3, 9)):
        x, y = rnd.randrange(width * 3 // 4), rnd.randrange(height // 10, height * 7 // 8)
        w, h = rnd.randrange(width // 6, width // 3), rnd.randrange(height // 20, height // 6)
        draw.rounded_rectangle(
            (x, y, x + w, y + h), 12, fill=tuple(rnd.randrange(256) for _ in "rgb")
        )
        for line in range(y + 10, y + h - 10, 22):
            draw.line(
                (x + 12, line, x + w - rnd.randrange(12, w // 2), line), fill=(40, 40, 40), width=8
            )
    return image  # fmt: skip


def _write_derived(root: str, entry: Entry) -> None:
    target = Path(root, entry.relative)
    target.parent.mkdir(parents=True, exist_ok=True)
    if entry.role == "duplicate":
        assert entry.of is not None
        shutil.copyfile(Path(root, entry.of), target)
    elif entry.role == "near":
        from PIL import Image

        assert entry.of is not None
        with Image.open(Path(root, entry.of)) as image:
            exif = image.getexif()
            picture = image.convert("RGB")
        if entry.how == "resized":
            picture = picture.resize((picture.width // 2, picture.height // 2))
        _save(picture, target, format="JPEG", quality=70 if entry.how == "q70" else 85, exif=exif)
    elif entry.how == "truncated":
        assert entry.of is not None
        data = Path(root, entry.of).read_bytes()
        target.write_bytes(data[: int(len(data) * 0.6)])
    elif entry.how == "garbage":
        target.write_bytes(random.Random(f"garbage-{entry.index}").randbytes(50_000))
    else:
        target.write_bytes(b"")


def write(root: str, entry: Entry, derived: bool) -> tuple[int, str]:
    """Write ``entry`` below ``root``; its size and BLAKE3."""
    import blake3

    (_write_derived if derived else _write_original)(root, entry)
    data = Path(root, entry.relative).read_bytes()
    return len(data), blake3.blake3(data).hexdigest()


def _write_star(args: tuple[str, Entry, bool]) -> tuple[int, str]:
    return write(*args)


# ── the set ────────────────────────────────────────────────────────────────────
@dataclass
class LibrarySet:
    root: Path  # the files
    entries: list[Entry]

    def paths(self) -> Iterator[Path]:
        return (self.root / e.relative for e in self.entries)

    @property
    def total_bytes(self) -> int:
        return sum(e.bytes for e in self.entries)


def make(cache: Path, count: int, seed: int, processes: int = 2) -> LibrarySet:
    """The set of ``count`` files for ``seed`` below ``cache`` (made unless there)."""
    from bench import _harness as h

    folder = cache / f"library-{count}-seed{seed}-v{VERSION}"
    root, manifest = folder / "files", folder / "manifest.json"
    if (folder / ".complete").exists():
        rows = json.loads(manifest.read_text())
        entries = [Entry(**{**row, "size": tuple(row["size"])}) for row in rows]
        return LibrarySet(root, entries)
    shutil.rmtree(folder, ignore_errors=True)
    root.mkdir(parents=True)
    entries = plan(count, seed)
    originals = [e for e in entries if e.role == "original"]
    derived = [e for e in entries if e.role != "original"]
    # Costly first (big HEICs and JPEGs), so that the pool does not end on one.
    originals.sort(key=lambda e: -(e.size[0] * e.size[1] * (8 if e.kind == "heic" else 1)))
    with h.spawn_pool(processes) as pool:
        for batch in (originals, derived):
            jobs = [(str(root), e, batch is derived) for e in batch]
            for entry, (size, digest) in zip(
                batch, pool.map(_write_star, jobs, chunksize=4), strict=True
            ):
                entry.bytes, entry.blake3 = size, digest  # fmt: skip
    entries = originals + derived
    manifest.write_text(json.dumps([asdict(e) for e in entries], indent=0))
    (folder / ".complete").touch()
    return LibrarySet(root, entries)
