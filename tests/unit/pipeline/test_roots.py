"""Confinement to roots: real paths, codes, and links among the parents of a path."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from photo_pipeline.pipeline.files import roots


def test_a_sibling_with_the_same_prefix_is_not_inside(tmp_path):
    (tmp_path / "photos").mkdir()
    (tmp_path / "photos-private").mkdir()
    assert roots.is_inside(str(tmp_path / "photos" / "a.jpg"), [tmp_path / "photos"])
    assert roots.is_inside(str(tmp_path / "photos"), [tmp_path / "photos"])
    assert not roots.is_inside(str(tmp_path / "photos-private" / "a.jpg"), [tmp_path / "photos"])


def test_real_path_inside_names_what_led_outside(tmp_path):
    base = tmp_path.resolve()
    inside, outside = base / "in", base / "out"
    inside.mkdir()
    outside.mkdir()
    (outside / "x").write_text("x")
    (inside / "link").symlink_to(outside / "x")
    assert roots.real_path_inside(inside / "new-file", [str(inside)]) == str(inside / "new-file")
    assert roots.real_path_inside(inside / "link", []) == str(outside / "x")  # unconfined
    with pytest.raises(roots.PathOutsideRoots) as via_link:
        roots.real_path_inside(inside / "link", [str(inside)])
    with pytest.raises(roots.PathOutsideRoots) as via_dots:
        roots.real_path_inside(f"{inside}/../out/x", [str(inside)])
    assert (via_link.value.code, via_dots.value.code) == (
        "symlink_outside_roots",
        "path_outside_roots",
    )
    assert via_link.value.status == 403


def test_symlink_below_finds_a_linked_parent_but_not_the_root(tmp_path):
    base = tmp_path.resolve()
    (base / "real-root").mkdir()
    (base / "root").symlink_to(base / "real-root")  # the root itself may be a link
    (base / "elsewhere").mkdir()
    (base / "real-root" / "2023").symlink_to(base / "elsewhere")
    (base / "real-root" / "2024").mkdir()
    root = base / "root"
    assert roots.symlink_below(root / "2023" / "a.jpg", root) == str(root / "2023")
    assert roots.symlink_below(root / "2024" / "a.jpg", root) is None
    assert roots.symlink_below(root / "2025" / "new" / "a.jpg", root) is None  # not yet made
    with pytest.raises(ValueError):
        roots.symlink_below(base / "elsewhere", root)


HOLD_PINNED = """
import sys
from photo_pipeline.pipeline.files import roots
with roots.pinned(sys.argv[1], [sys.argv[2]]) as opened:
    print(opened.path, flush=True)
    sys.stdin.read()  # held open until killed
"""


def test_the_stand_in_of_a_killed_process_is_removed_and_a_live_one_kept(
    tmp_path, monkeypatch
) -> None:
    photos, scratch = tmp_path / "photos", tmp_path / "tmp"
    photos.mkdir()
    scratch.mkdir()
    (photos / "IMG_1.JPG").write_bytes(b"not really a photo")
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    with subprocess.Popen(
        [sys.executable, "-c", HOLD_PINNED, str(photos / "IMG_1.JPG"), str(photos)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={**os.environ, "TMPDIR": str(scratch)},
        text=True,
    ) as holder:
        assert holder.stdout is not None
        killed = Path(holder.stdout.readline().strip()).parent
        assert killed.parent == scratch
        with roots.pinned(photos / "IMG_1.JPG", [str(photos)]) as ours:
            assert roots.remove_stale_stand_ins() == 0  # both processes are alive
            holder.kill()
            holder.wait()
            assert roots.remove_stale_stand_ins() == 1
            assert not killed.exists()
            assert os.path.islink(ours.path)  # this process's own, in use
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize(
    "stem", [b"\xe9" * 251, b"\xed\xa0\x80" * 83 + b"\xff\xff", b"x." + b"\xe9" * 253]
)
def test_a_long_name_that_is_not_utf8_still_opens(tmp_path, stem) -> None:
    """Each byte that is not UTF-8 is three in the stand-in's name: a 255-byte Latin-1
    name must not come out too long to exist (its photo did not read at all)."""
    name = os.fsdecode(stem + b".jpg" if len(stem) < 253 else stem)
    original = tmp_path / name
    original.write_bytes(b"the photo's bytes")
    with roots.pinned(original, [str(tmp_path)]) as opened:
        shown = os.path.basename(opened.path)
        assert len(shown.encode()) <= 255
        assert shown.endswith(".jpg") == name.endswith(".jpg")
        assert shown.startswith("\ufffd") or shown.startswith("x.")
        assert Path(opened.path).read_bytes() == b"the photo's bytes"
