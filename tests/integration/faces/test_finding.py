"""media.faces on the real test photos: what is found, what is skipped, how far apart
the embeddings of one person and of two people are."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFilter

from photo_pipeline.media.faces import FaceFinder, missing_models
from photo_pipeline.pipeline.faces.grouping import JOIN_DISTANCE
from tests.support.face_photos import OBAMA


def _rgb(path, width=None):
    with Image.open(path) as image:
        image = image.convert("RGB")
        if width is not None:
            image = image.resize((width, round(image.height * width / image.width)))
        return np.asarray(image)


def test_every_face_of_t1_is_found_with_five_landmarks_inside_its_box(face_images):
    found = FaceFinder().find(_rgb(face_images / "t1.jpg"))
    assert len(found.faces) == 6
    assert (found.too_small, found.blurred) == (0, 0)
    for face in found.faces:
        left, top, width, height = face.box
        assert len(face.landmarks) == 5
        for x, y in face.landmarks:
            assert left - 0.2 * width <= x <= left + 1.2 * width
            assert top - 0.2 * height <= y <= top + 1.2 * height
        assert face.embedding.shape == (128,)


def test_one_persons_photos_are_closer_than_the_join_distance_and_two_people_farther(
    face_images,
):
    finder = FaceFinder()
    obama = [finder.find(_rgb(face_images / name)).faces for name in OBAMA]
    assert [len(faces) for faces in obama] == [1] * len(OBAMA)
    biden = finder.find(_rgb(face_images / "biden.jpg")).faces
    others = biden + finder.find(_rgb(face_images / "t1.jpg")).faces
    same = [np.linalg.norm(a[0].embedding - b[0].embedding) for a in obama for b in obama]
    apart = [np.linalg.norm(a[0].embedding - b.embedding) for a in obama for b in others]
    assert max(same) < JOIN_DISTANCE < min(apart)


def test_blurred_and_too_small_faces_are_counted_not_kept(face_images):
    finder = FaceFinder()
    with Image.open(face_images / "t1.jpg") as t1:
        blurred = np.asarray(t1.convert("RGB").filter(ImageFilter.GaussianBlur(2.0)))
    found = finder.find(blurred)
    assert found.faces == [] and found.blurred >= 4
    small = finder.find(_rgb(face_images / "t1.jpg", width=400))
    assert small.faces == [] and small.too_small >= 4


def test_no_face_in_a_photo_without_one_nor_in_the_astronauts_patch(face_images):
    finder = FaceFinder()
    assert finder.find(_rgb(face_images / "camera.png")).faces == []
    assert len(finder.find(_rgb(face_images / "astronaut.png")).faces) == 1


def test_the_68_point_model_is_never_named(face_images):
    import inspect

    from photo_pipeline.media import faces

    assert missing_models() is None
    assert "68" not in inspect.getsource(faces).replace("68-point", "")
