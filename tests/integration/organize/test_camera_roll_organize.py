"""organize --move of a camera roll: every media file (videos, both parts of a Live
Photo, the Motion Photo) moves byte for byte, only non-media stays behind, a Live
Photo's parts land side by side with one stem, and undo puts everything back."""

from __future__ import annotations

import hashlib
import os
from collections import Counter
from pathlib import Path

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline import organize
from tests.support.camera_roll import copy_roll, roll_template_fixture  # noqa: F401
from tests.support.photo_jobs import TEMPLATE, run_worker, scan_folders

NOT_MEDIA = {"README", "notes.txt", "Thumbs.db"}


def sha256s(root: Path) -> dict[str, str]:
    found = {}
    for folder, _, names in os.walk(root):
        for name in names:
            path = Path(folder) / name
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def test_move_takes_every_media_file_and_keeps_live_photos_together(
    session_factory, roll_template, tmp_path
):
    source = copy_roll(roll_template[0], tmp_path / "phone")
    spec = roll_template[1]
    dest = tmp_path / "library"
    dest.mkdir()
    before = sha256s(source)
    scan_folders(session_factory, source)

    service = JobService(session_factory)
    job = organize.start_organize(service, dest, TEMPLATE, move=True).job
    run_worker(session_factory, organize.JOB_TYPE)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert service.progress(job["id"])["by_state"].get("failed", 0) == 0

    left = sha256s(source)
    assert set(left) == NOT_MEDIA  # only what is not media stays behind
    moved = sha256s(dest)
    media = {p: h for p, h in before.items() if p not in NOT_MEDIA}
    assert Counter(moved.values()) == Counter(media.values())  # byte for byte, each once
    where = {h: p for p, h in moved.items()}
    for still, motion in spec["live"]:
        placed_still = Path(where[before[still]])
        placed_motion = Path(where[before[motion]])
        assert placed_still.parent == placed_motion.parent, (placed_still, placed_motion)
        assert placed_still.stem == placed_motion.stem
    # the sidecar travelled with its photo
    photo = Path(where[before["DCIM/IMG_0100.JPG"]])
    assert str(photo.with_suffix(".xmp")) in moved

    undo = organize.start_undo(service, job["id"]).job
    run_worker(session_factory, organize.UNDO_JOB_TYPE)
    assert service.get(undo["id"])["state"] == JobState.SUCCEEDED
    assert sha256s(source) == before
    assert sha256s(dest) == {}
