"""The real face photos (``make face-images``) and dlib's models: outside CI a test
without them is skipped with the reason; under ``CI=true`` it fails."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from PIL import Image, ImageFilter, ImageOps

from photo_pipeline.media.faces import missing_models

IMAGES = Path(
    os.environ.get("PHOTO_PIPELINE_FACE_IMAGES") or "~/.cache/photo-pipeline/face-images"
).expanduser()
OBAMA = [
    "obama.jpg",
    "obama2.jpg",
    "obama3.jpg",
    "obama_partial_face.jpg",
    "obama_partial_face2.jpg",
]
NEEDED = [*OBAMA, "biden.jpg", "t1.jpg", "astronaut.png", "camera.png"]


def _unavailable(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"{reason} (CI must run the face tests)")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def face_images() -> Path:
    """The folder of the test images."""
    reason = missing_models()
    if reason is not None:
        _unavailable(reason)
    missing = [name for name in NEEDED if not (IMAGES / name).is_file()]
    if missing:
        _unavailable(f"face test images missing in {IMAGES}: {missing}; run `make face-images`")
    return IMAGES


def people_folder(face_images: Path, folder: Path) -> Path:
    """A folder of the test photos: one person in five photos, another alone, six people
    in t1.jpg and its mirror image, a blurred t1, a t1 too small to recognise, the
    astronaut and a photo with no face."""
    folder.mkdir(parents=True)
    for name in [*OBAMA, "biden.jpg", "t1.jpg", "astronaut.png", "camera.png"]:
        shutil.copy(face_images / name, folder / name)
    with Image.open(face_images / "t1.jpg") as t1:
        ImageOps.mirror(t1).save(folder / "t1_mirror.jpg", quality=92)
        t1.filter(ImageFilter.GaussianBlur(2.0)).save(folder / "t1_blurred.jpg", quality=92)
        small = t1.resize((400, round(t1.height * 400 / t1.width)), Image.LANCZOS)
        small.save(folder / "t1_small.jpg", quality=92)
    return folder
