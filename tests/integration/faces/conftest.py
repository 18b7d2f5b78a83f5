"""The face photos fixture (tests.support.face_photos)."""

from tests.support.face_photos import face_images  # noqa: F401  (a fixture)
