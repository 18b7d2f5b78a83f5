"""Faces in a rendered preview: where they are, their 5 landmarks, a 128-number
embedding (dlib's ResNet, 99.38% on LFW) and how sharp they are.

The model files come from the installed ``face_recognition_models`` package, never from a
download: :func:`missing_models` says in one sentence what is missing and how to install
it. Only the 5-point landmark model and the ResNet embedding are loaded; the package's
68-point landmark model is never opened (its terms forbid commercial use). Detection is
dlib's HOG detector (0.1–0.2 s per 1440 px preview on one core; its CNN detector is
several times slower on a CPU).

Faces too small to recognise (box narrower than :data:`MIN_FACE_PIXELS`) or too blurred
(:func:`sharpness` of the aligned 64 px chip below :data:`MIN_SHARPNESS`) are counted,
not kept. Thresholds measured on the test images of tests/integration/faces
(face_recognition's, insightface's t1.jpg, scikit-image's astronaut): sharp faces 0.36
and up, the same faces after a Gaussian blur of 0.15% of the width 0.20 and below.
"""

from __future__ import annotations

import importlib.util
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MODEL_PACKAGE = "face_recognition_models"
LANDMARKS_MODEL = "shape_predictor_5_face_landmarks.dat"
EMBEDDING_MODEL = "dlib_face_recognition_resnet_model_v1.dat"
INSTALL_HINT = "pip install 'photo-pipeline[faces]' (dlib-bin, face-recognition-models 0.3.0)"
EMBEDDING_SIZE = 128
MIN_FACE_PIXELS = 40
# Below this the HOG detector's finds are mostly not faces: astronaut.png's mission
# patch scored 0.11-0.12, the faintest real face of the test images 0.21 (t1.jpg).
MIN_SCORE = 0.15
# Sharper than a photographed face can be: a drawing or printed graphic. The same patch,
# searched at twice its size after JPEG or WebP compression, scored 0.21 as a face, with
# a sharpness of 1.66; the test images' real faces measure 0.36-0.70.
MAX_SHARPNESS = 1.2
MIN_SHARPNESS = 0.25
# HOG finds faces of 80 px and more; an image this small is searched at twice its size
# too (faces from 40 px; 4 times the work, still less than a 1440 px preview's).
UPSAMPLE_UP_TO = 800
_CHIP_SIZE = 64  # the sharpness is judged at one scale whatever the face's size


class FaceModelsMissing(Exception):
    """dlib or the model files are not installed on this machine."""


@dataclass(frozen=True)
class Face:
    """One face, in fractions of the image's width and height (so that it maps onto any
    rendition of the photo): box ``left, top, width, height``, landmarks as five
    ``(x, y)`` (eye corners and the base of the nose)."""

    box: tuple[float, float, float, float]
    landmarks: tuple[tuple[float, float], ...]
    embedding: np.ndarray[Any, np.dtype[np.float32]]
    score: float  # the detector's confidence
    sharpness: float  # see :func:`sharpness`


@dataclass
class FoundFaces:
    faces: list[Face] = field(default_factory=list)
    too_small: int = 0
    blurred: int = 0


def model_folder() -> Path | None:
    """Where the installed model package keeps its files (None: not installed)."""
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "models"


def missing_models() -> str | None:
    """None when faces can be found here; else one sentence saying what is missing."""
    if importlib.util.find_spec("dlib") is None:
        return f"faces need dlib, which is not installed: {INSTALL_HINT}"
    folder = model_folder()
    if folder is None:
        return f"faces need the model package {MODEL_PACKAGE}, not installed: {INSTALL_HINT}"
    absent = [name for name in (LANDMARKS_MODEL, EMBEDDING_MODEL) if not (folder / name).is_file()]
    if absent:
        return f"faces need {', '.join(absent)} in {folder}: {INSTALL_HINT}"
    return None


def sharpness(gray: np.ndarray[Any, np.dtype[np.float32]]) -> float:
    """The Laplacian's standard deviation over the image's: contrast-free, so a dark
    face is not taken for a blurred one."""
    lap = 4 * gray[1:-1, 1:-1] - gray[:-2, 1:-1] - gray[2:, 1:-1] - gray[1:-1, :-2] - gray[1:-1, 2:]
    spread = float(gray.std())
    return float(lap.std()) / spread if spread > 1e-6 else 0.0


class FaceFinder:
    """The loaded models (about 30 MB; loading takes 0.3 s). Not to be shared between
    threads: dlib's detector keeps scratch state, and two threads running one detector
    found dozens of false faces with scores of 1e37 (:func:`shared_finder` gives each
    thread its own)."""

    def __init__(self, upsample: int | None = None) -> None:
        reason = missing_models()
        if reason is not None:
            raise FaceModelsMissing(reason)
        import dlib

        folder = model_folder()
        assert folder is not None  # missing_models checked it
        self.upsample = upsample
        self._detector = dlib.get_frontal_face_detector()
        self._landmarks = dlib.shape_predictor(str(folder / LANDMARKS_MODEL))
        self._embedder = dlib.face_recognition_model_v1(str(folder / EMBEDDING_MODEL))
        self._dlib = dlib

    def find(self, rgb: np.ndarray[Any, np.dtype[np.uint8]]) -> FoundFaces:
        """Every face in ``rgb`` (height × width × 3, uint8) worth recognising."""
        height, width = rgb.shape[:2]
        upsample = self.upsample
        if upsample is None:
            upsample = 1 if max(height, width) <= UPSAMPLE_UP_TO else 0
        boxes, scores, _ = self._detector.run(rgb, upsample, 0.0)
        found = FoundFaces()
        for box, score in zip(boxes, scores, strict=True):
            if score < MIN_SCORE:
                continue  # no face, most likely: not counted as one skipped
            if min(box.width(), box.height()) < MIN_FACE_PIXELS:
                found.too_small += 1
                continue
            shape = self._landmarks(rgb, box)
            chip = self._dlib.get_face_chip(rgb, shape, size=_CHIP_SIZE)
            gray = np.asarray(chip, dtype=np.float32) @ np.array(
                [0.299, 0.587, 0.114], dtype=np.float32
            )
            sharp = sharpness(gray)
            if sharp > MAX_SHARPNESS:
                continue  # a graphic, not a face: not counted either
            if sharp < MIN_SHARPNESS:
                found.blurred += 1
                continue
            embedding = np.asarray(
                self._embedder.compute_face_descriptor(rgb, shape), dtype=np.float32
            )
            left, top = max(box.left(), 0), max(box.top(), 0)
            right, bottom = min(box.right(), width - 1), min(box.bottom(), height - 1)
            found.faces.append(
                Face(
                    box=(
                        left / width,
                        top / height,
                        (right - left + 1) / width,
                        (bottom - top + 1) / height,
                    ),
                    landmarks=tuple(
                        (shape.part(i).x / width, shape.part(i).y / height) for i in range(5)
                    ),
                    embedding=embedding,
                    score=float(score),
                    sharpness=sharp,
                )
            )
        return found

    def find_in_file(self, path: Path) -> FoundFaces:
        """The faces of an image file (a rendered preview: JPEG, WebP or AVIF)."""
        from PIL import Image

        with Image.open(path) as image:
            rgb = np.asarray(image.convert("RGB"))
        return self.find(rgb)


_per_thread = threading.local()


def shared_finder() -> FaceFinder:
    """This thread's :class:`FaceFinder`, loaded on its first use."""
    finder: FaceFinder | None = getattr(_per_thread, "finder", None)
    if finder is None:
        finder = _per_thread.finder = FaceFinder()
    return finder
