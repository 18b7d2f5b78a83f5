"""How much two boxes of one face overlap, against two faces': the measurement behind
``media.xmp_regions.MATCH_OVERLAP``. The faces of the test photos (``make
face-images``) are found in the photo and in a copy of it at 60 % of its size (one face,
two renditions); each face's box is also grown by half in width and height, as
Lightroom and digiKam box a head. Prints the smallest overlap of one face's boxes and
the largest of two faces'.

    python -m bench.region_overlap
"""

from __future__ import annotations

import itertools
import os
from pathlib import Path

import numpy as np
from PIL import Image

from photo_pipeline.media.faces import shared_finder
from photo_pipeline.media.xmp_regions import overlap

IMAGES = Path(
    os.environ.get("PHOTO_PIPELINE_FACE_IMAGES") or "~/.cache/photo-pipeline/face-images"
).expanduser()
PHOTOS = ["t1.jpg", "obama.jpg", "obama2.jpg", "obama3.jpg", "biden.jpg", "astronaut.png"]


def _boxes(image: Image.Image) -> list[tuple[float, float, float, float]]:
    found = shared_finder().find(np.asarray(image.convert("RGB")))
    return [tuple(face.box) for face in found.faces]  # type: ignore[misc]


def _grown(box: tuple[float, float, float, float], by: float) -> tuple[float, float, float, float]:
    left, top, width, height = box
    return (left - width * (by - 1) / 2, top - height * (by - 1) / 2, width * by, height * by)


def main() -> None:
    same: list[float] = []
    grown: list[float] = []
    different: list[float] = []
    for name in PHOTOS:
        with Image.open(IMAGES / name) as image:
            full = _boxes(image)
            small = _boxes(image.resize((round(image.width * 0.6), round(image.height * 0.6))))
        for box in full:
            grown.append(overlap(box, _grown(box, 1.5)))
            if small:
                same.append(max(overlap(box, other) for other in small))
        for a, b in itertools.combinations(full, 2):
            different.append(overlap(a, b))
    print(f"faces: {len(grown)} in {len(PHOTOS)} photos")
    found = [share for share in same if share > 0]
    print(
        f"one face, two renditions: smallest overlap {min(found):.2f} "
        f"({len(found)} faces found in both; {len(same) - len(found)} not found in the smaller)"
    )
    print(f"one face, its box grown 1.5x: overlap {min(grown):.2f}")
    print(f"two faces of one photo: largest overlap {max(different, default=0.0):.2f}")


if __name__ == "__main__":
    main()
