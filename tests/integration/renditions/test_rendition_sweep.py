"""The sweep of abandoned rendition temp files reads the store only when a process
that staged into it is gone (or an hour silent): a render with nothing to do does not
list a million renditions, and a dead stager's leftovers still go."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from photo_pipeline.pipeline.library.home import STORE
from photo_pipeline.pipeline.renditions import store as rendition_store
from photo_pipeline.pipeline.renditions.store import stage, sweep_temp_files


def stage_in_a_process_that_ends(home: Path, relative: str) -> int:
    """Stage one file in a child process that exits without publishing it (as a
    worker killed mid-batch leaves it); returns the dead process's id."""
    code = (
        "import sys; from pathlib import Path; "
        "from photo_pipeline.pipeline.renditions.store import stage; "
        "stage(Path(sys.argv[1]), {sys.argv[2]: b'partial'})"
    )
    subprocess.run([sys.executable, "-c", code, str(home), relative], check=True)
    return _pid_of_leftover(home, relative)


def _pid_of_leftover(home: Path, relative: str) -> int:
    target = home / relative
    (leftover,) = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}~")]
    return int(leftover.name.split("~")[-2])


def temp_files(home: Path) -> set[str]:
    return {p.name.split("~")[0] for p in (home / STORE).rglob("*.tmp")}


def test_a_dead_stagers_leftovers_are_swept_and_a_sweep_without_one_reads_nothing(tmp_path):
    home = tmp_path / "home"
    ours = stage(home, {f"{STORE}/aa/live-thumbnail.webp": b"being written"})
    staging = home / STORE / "staging"
    assert [p.name for p in staging.iterdir()] == [f"{rendition_store._HOST}~{os.getpid()}"]
    # A leftover of a dead process with no marker (staged before markers existed):
    # a sweep that finds no abandoned marker reads no folder, so it stays for now.
    dead = stage_in_a_process_that_ends(home, f"{STORE}/bb/old-preview.webp")
    (staging / f"{rendition_store._HOST}~{dead}").rmdir()
    assert sweep_temp_files(home) == 0
    assert temp_files(home) == {".live-thumbnail.webp", ".old-preview.webp"}

    # A process that staged and is gone: its marker makes the sweep read the store,
    # which removes every dead process's leftover (not the live one's) and its marker.
    gone = stage_in_a_process_that_ends(home, f"{STORE}/cc/killed-thumbnail.webp")
    assert (staging / f"{rendition_store._HOST}~{gone}").exists()
    assert sweep_temp_files(home) == 2
    assert temp_files(home) == {".live-thumbnail.webp"}
    assert [p.name for p in staging.iterdir()] == [f"{rendition_store._HOST}~{os.getpid()}"]
    assert sweep_temp_files(home) == 0

    # An hour later, our marker is silent for an hour too: the store is read and our
    # hour-old temp file goes, as any temp file older than an hour did before.
    assert sweep_temp_files(home, now=time.time() + 2 * 3600) == 1
    assert temp_files(home) == set() and list(staging.iterdir()) == []
    rendition_store.discard(ours)


def test_a_store_without_markers_is_swept_once_then_markers_tell(tmp_path):
    home = tmp_path / "home"
    stage_in_a_process_that_ends(home, f"{STORE}/dd/left-preview.webp")
    staging = home / STORE / "staging"
    for marker in staging.iterdir():
        marker.rmdir()
    staging.rmdir()  # a store staged into before the markers
    assert sweep_temp_files(home) == 1
    assert temp_files(home) == set() and staging.is_dir()
    assert sweep_temp_files(home) == 0
    assert sweep_temp_files(tmp_path / "never-rendered") == 0
