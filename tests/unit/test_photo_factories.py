"""The test photo factory itself: distinct content per seed, directory targets."""

from __future__ import annotations

from photo_pipeline.media import hash_file, read_metadata
from tests.factories import photos


def test_seeds_give_distinct_files_for_every_format(tmp_path) -> None:
    factories = [photos.jpeg, photos.png, photos.tiff, photos.webp, photos.dng, photos.nef]
    digests = {
        hash_file(factory(tmp_path / f"{factory.__name__}-{seed}", size=(64, 48), seed=seed))
        for factory in factories
        for seed in range(20)
    }
    assert len(digests) == len(factories) * 20


def test_same_seed_same_pixels(tmp_path) -> None:
    assert photos.picture((64, 48), seed=4).tobytes() == photos.picture((64, 48), seed=4).tobytes()
    assert photos.picture((64, 48), seed=4).tobytes() != photos.picture((64, 48), seed=5).tobytes()


def test_directory_target_gets_a_default_name(tmp_path) -> None:
    written = [
        photos.jpeg(tmp_path, seed=3),
        photos.png(tmp_path, seed=3),
        photos.heic(tmp_path, seed=3, size=(64, 48)),
        photos.dng(tmp_path, seed=3),
        photos.truncated_jpeg(tmp_path, seed=3),
        photos.garbage_exif_dates(tmp_path, seed=3),
        photos.empty(tmp_path),
        photos.text_as_jpeg(tmp_path),
    ]
    assert all(path.parent == tmp_path for path in written)
    assert len({path.name for path in written}) == len(written)
    assert photos.jpeg(tmp_path, seed=3).name == "IMG_0003.jpg"


def test_hundreds_of_jpegs_are_distinct_photos(tmp_path) -> None:
    # How fast the factory is: bench/photo_factory.py (no wall-clock check here).
    paths = [photos.jpeg(tmp_path, seed=seed) for seed in range(300)]
    assert len({hash_file(path) for path in paths}) == 300
    assert read_metadata(paths[-1]).format == "jpeg"
