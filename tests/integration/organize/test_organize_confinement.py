"""organize stays inside its destination and keeps originals as private as they were."""

from __future__ import annotations

import os
import stat

from photo_pipeline.jobs import JobService
from tests.factories import photos
from tests.support.photo_jobs import run_organize, scan_folders


def test_a_symlinked_folder_in_the_destination_is_never_written_through(session_factory, tmp_path):
    root, dest, outside = tmp_path / "photos", tmp_path / "organized", tmp_path / "outside"
    photos.jpeg(root / "a.jpg", size=(24, 16), seed=1, taken="2023:07:14 10:00:00")
    photos.jpeg(root / "b.jpg", size=(24, 16), seed=2, taken="2024:01:02 10:00:00")
    scan_folders(session_factory, root)
    outside.mkdir()
    dest.mkdir()
    (dest / "2023").symlink_to(outside, target_is_directory=True)

    job = run_organize(session_factory, dest, template="{taken:%Y}/{original_name}.{ext}")
    codes = {
        i["item_key"].split(":", 1)[1]: i["error_code"]
        for i in JobService(session_factory).items(job["id"])
    }
    assert codes == {"a.jpg": "symlinked_folder", "b.jpg": None}
    assert list(outside.iterdir()) == [], "organize wrote through the symlinked folder"
    assert (dest / "2024/b.jpg").is_file()


def test_copies_keep_the_originals_permissions(session_factory, tmp_path):
    root, dest = tmp_path / "photos", tmp_path / "organized"
    for n, mode in enumerate((0o600, 0o640, 0o444)):
        photo = root / f"p{n}.jpg"
        photos.jpeg(photo, size=(24, 16), seed=n, taken="2023:07:14 10:00:00")
        photo.chmod(mode)
    scan_folders(session_factory, root)
    run_organize(session_factory, dest, template="{original_name}.{ext}")
    for n, mode in enumerate((0o600, 0o640, 0o444)):
        copied = (dest / f"p{n}.jpg").stat()
        assert stat.S_IMODE(copied.st_mode) == mode, f"p{n}.jpg became {copied.st_mode:o}"
        assert copied.st_uid == os.stat(root / f"p{n}.jpg").st_uid
