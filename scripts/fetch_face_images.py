"""Real face photos for the face tests, fetched from the package registry as pinned,
hash-checked archives (``pip download``) and extracted into a cache folder:

- face_recognition 1.3.0 (sdist, MIT): tests/test_images — three photos of one person
  (obama.jpg, obama2.jpg, obama3.jpg, and two partial crops), one of another (biden.jpg);
- insightface 2.1 (wheel): data/images/t1.jpg, six people in one photo;
- scikit-image 0.26.0 (wheel): data/astronaut.png (public domain), camera.png (CC0, no
  face).

    python scripts/fetch_face_images.py [FOLDER]

FOLDER defaults to ``$PHOTO_PIPELINE_FACE_IMAGES`` or ~/.cache/photo-pipeline/face-images
(what tests/integration/faces reads). Already there: nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

DEFAULT = Path("~/.cache/photo-pipeline/face-images")
# (requirement, pip options, archive name, sha256, {member: image name})
ARCHIVES = [
    (
        "face_recognition==1.3.0",
        ["--no-binary", ":all:"],
        "face_recognition-1.3.0.tar.gz",
        "5e5efdd1686aa566af0d3cc1313b131e4b197657a8ffd03669e6d3fad92705ec",
        {
            f"face_recognition-1.3.0/tests/test_images/{name}": name
            for name in (
                "obama.jpg",
                "obama2.jpg",
                "obama3.jpg",
                "obama_partial_face.jpg",
                "obama_partial_face2.jpg",
                "biden.jpg",
            )
        },
    ),
    (
        "insightface==2.1",
        ["--only-binary", ":all:"],
        "insightface-2.1-py3-none-any.whl",
        "dcd58ee79d99d689572477315f3149353afd65a36dc575f597cbb217a7bde399",
        {"insightface/data/images/t1.jpg": "t1.jpg"},
    ),
    (
        "scikit-image==0.26.0",
        [
            "--only-binary",
            ":all:",
            "--platform",
            "manylinux_2_28_x86_64",
            "--python-version",
            "3.11",
            "--implementation",
            "cp",
        ],
        "scikit_image-0.26.0-cp311-cp311-manylinux_2_24_x86_64.manylinux_2_28_x86_64.whl",
        "74aa5518ccea28121f57a95374581d3b979839adc25bb03f289b1bc9b99c58af",
        {"skimage/data/astronaut.png": "astronaut.png", "skimage/data/camera.png": "camera.png"},
    ),
]


def images() -> list[str]:
    return [name for *_, members in ARCHIVES for name in members.values()]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _member(archive: Path, member: str) -> bytes:
    if archive.name.endswith(".tar.gz"):
        with tarfile.open(archive) as bundle:
            extracted = bundle.extractfile(member)
            if extracted is None:
                raise SystemExit(f"{archive.name}: {member} is no file")
            return extracted.read()
    with zipfile.ZipFile(archive) as wheel:
        return wheel.read(member)


def fetch(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    downloads = folder / "archives"
    for requirement, options, archive, sha256, members in ARCHIVES:
        if all((folder / name).is_file() for name in members.values()):
            continue
        path = downloads / archive
        if not path.is_file() or _sha256(path) != sha256:
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "-d",
                    str(downloads),
                    *options,
                    requirement,
                ],
                check=True,
            )
        got = _sha256(path)
        if got != sha256:
            path.unlink()
            raise SystemExit(f"{archive}: sha256 {got}, expected {sha256}")
        for member, name in members.items():
            data = _member(path, member)
            partial = folder / f".{name}.partial"
            partial.write_bytes(data)
            partial.replace(folder / name)  # never a half image under its name
    print(f"face test images in {folder}: {', '.join(images())}")


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.environ.get("PHOTO_PIPELINE_FACE_IMAGES")
    fetch(Path(target).expanduser() if target else DEFAULT.expanduser())
