"""The dedupe tests' library: a tree of exact copies (2 to 5 of a photo), a RAW+JPEG
pair with a sidecar, a renamed copy with its own sidecar, near duplicates and unique
photos, with chosen mtimes and modes; the ``library`` fixture scans it and records its
near groups. And a tree read back whole (path -> sha256, mtime, mode), to tell that
nothing was lost."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

import pytest

from photo_pipeline.pipeline.library.browse import Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near.similar import _replace_groups
from tests.factories import photos
from tests.support.photo_jobs import scan_folders

DAY = 86_400 * 10**9
BASE = 1_700_000_000 * 10**9


def stamp(path: Path, days_ago: int, mode: int = 0o644) -> Path:
    os.chmod(path, mode)
    os.utime(path, ns=(BASE - days_ago * DAY, BASE - days_ago * DAY))
    return path


def same_bytes(original: Path, copy: Path, days_ago: int, mode: int = 0o644) -> Path:
    copy.parent.mkdir(parents=True, exist_ok=True)
    copy.write_bytes(original.read_bytes())
    return stamp(copy, days_ago, mode)


def build_dedupe_tree(root: Path) -> None:
    """Exact groups of 2 to 5 copies, a RAW+JPEG pair with a sidecar, a copy with its
    own sidecar, near duplicates, and unique photos."""
    for n in range(1, 5):  # content n has n + 1 copies
        original = stamp(photos.jpeg(root / f"card/IMG_000{n}.jpg", size=(32, 24), seed=n), 10)
        names = ["backup/IMG_000{n}.jpg", "backup/copy_IMG_000{n}.jpg", "old/IMG_000{n} (1).jpg"]
        names += ["old/deeper/IMG_000{n} - Copy.jpg"]
        for k in range(n):
            # Some copies more private; copy_ ones older than the original, in vain.
            days = [5, 30, 3, 2][k]
            same_bytes(original, root / names[k].format(n=n), days, 0o600 if k % 2 else 0o644)
    pair = root / "camera-card"
    stamp(photos.dng(pair / "IMG_0100.dng", seed=100), 5)
    stamp(photos.jpeg(pair / "IMG_0100.JPG", size=(32, 24), seed=101), 5)
    (pair / "IMG_0100.xmp").write_text("<x:xmpmeta>rating 5</x:xmpmeta>")
    stamp(pair / "IMG_0100.xmp", 5)
    # An older lone copy of the pair's JPEG at a shorter path: the pair wins anyway.
    same_bytes(pair / "IMG_0100.JPG", root / "b/IMG_0100.JPG", 50)
    # A renamed copy with a sidecar of its own: the sidecar travels with it.
    stamp(photos.jpeg(root / "card/IMG_0200.jpg", size=(32, 24), seed=200), 10)
    same_bytes(root / "card/IMG_0200.jpg", root / "dups/IMG_0200 copy.jpg", 30)
    (root / "dups/IMG_0200 copy.xmp").write_text("<x:xmpmeta>copy's rating</x:xmpmeta>")
    # Near duplicates: an original and a smaller re-save (different bytes), twice.
    for n in (300, 400):
        photos.jpeg(root / f"card/IMG_{n}.jpg", size=(48, 32), seed=n)
        photos.jpeg(root / f"edits/IMG_{n}_small.jpg", size=(36, 24), seed=n, quality=60)
    photos.jpeg(root / "card/unique.jpg", size=(32, 24), seed=999)


def sha256_tree(root: Path) -> dict[str, tuple[str, int, int]]:
    """Relative path -> (sha256, mtime, mode) of every file below ``root``."""
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            info = path.stat()
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            found[str(path.relative_to(root))] = (digest, info.st_mtime_ns, info.st_mode & 0o7777)
    return found


def digests(*trees: dict) -> Counter:
    return Counter(h for tree in trees for h, _, _ in tree.values())


@pytest.fixture(name="library")
def library_fixture(tmp_path, session_factory) -> Path:
    root = tmp_path / "photos"
    build_dedupe_tree(root)
    scan_folders(session_factory, root)
    ids = {a["content_hash"]: a["id"] for a in Catalog(session_factory).assets(limit=10_000)}
    by_path = {f["path"]: f["asset_id"] for f in Catalog(session_factory).files()}
    # Near groups as `similar` records them: keeper first; a decision on one only.
    groups = []
    for n in (300, 400):
        big, small = by_path[f"card/IMG_{n}.jpg"], by_path[f"edits/IMG_{n}_small.jpg"]
        groups.append(
            [
                {"id": big, "distance": 0},
                {"id": small, "distance": 2},
            ]
        )
    _replace_groups(session_factory, groups)
    Browser(session_factory).decide(f"near:{by_path['card/IMG_300.jpg']}", [
        str(by_path["card/IMG_300.jpg"])
    ])  # fmt: skip
    assert len(ids) >= 10
    return root
