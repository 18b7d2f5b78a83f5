"""One decode per photo (#18): a caller that renders a photo skips the metadata read's
own check decode, and the render's decode catches what that check caught; renditions
in every format the settings offer."""

from __future__ import annotations

import io
import threading

import pytest
from PIL import Image

from photo_pipeline.media import MediaError, read_metadata
from photo_pipeline.media.decode import pixels_checked_by_caller
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories import photos


def code_of(function, *args) -> str | None:
    try:
        function(*args)
    except MediaError as exc:
        return exc.code
    return None


@pytest.mark.parametrize("keep", [0.3, 0.9, 0.999])
def test_a_truncated_jpeg_passes_the_unchecked_read_and_fails_the_render(tmp_path, keep):
    path = photos.truncated_jpeg(tmp_path / "t.jpg", size=(1600, 1200), keep=keep)
    assert code_of(read_metadata, path) == "corrupt_file"  # the check decode, as before
    with pixels_checked_by_caller():
        metadata = read_metadata(path)  # headers only: the size is still read
        assert (metadata.width, metadata.height) == (1600, 1200)
        # the render decode reads every byte, at whatever DCT scale: it fails instead
        small = RenderSettings(thumbnail_size=64, preview_size=200)  # decoded at 1/8
        assert code_of(render_file, path, small) == "corrupt_file"
        assert code_of(render_file, path, RenderSettings()) == "corrupt_file"
    assert code_of(read_metadata, path) == "corrupt_file"  # checked again after the block


def test_skipping_the_check_is_the_calling_threads_alone(tmp_path):
    path = photos.truncated_jpeg(tmp_path / "t.jpg", size=(320, 240))
    elsewhere: list[str | None] = []
    with pixels_checked_by_caller():
        other = threading.Thread(target=lambda: elsewhere.append(code_of(read_metadata, path)))
        other.start()
        other.join()
        assert code_of(read_metadata, path) is None
    assert elsewhere == ["corrupt_file"]  # a pool thread beside it still checks


def test_other_formats_keep_their_own_checks(tmp_path):
    path = photos.png(tmp_path / "p.png", size=(160, 120), seed=3)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pixels_checked_by_caller():
        assert code_of(read_metadata, path) == "corrupt_file"


@pytest.mark.parametrize(
    ("fmt", "pillow_format"), [("jpeg", "JPEG"), ("webp", "WEBP"), ("avif", "AVIF")]
)
def test_every_format_renders_both_sizes_from_one_decode(tmp_path, fmt, pillow_format):
    path = photos.jpeg(tmp_path / "a.jpg", size=(1200, 800), seed=5, orientation=6)
    settings = RenderSettings(thumbnail_size=64, preview_size=300, format=fmt)
    assert settings.extension == {"jpeg": "jpg", "webp": "webp", "avif": "avif"}[fmt]
    result = render_file(path, settings)
    sizes = {}
    for rendition in result.renditions:
        image = Image.open(io.BytesIO(rendition.data))
        image.load()
        assert image.format == pillow_format and rendition.format == fmt
        sizes[rendition.kind] = image.size
    assert sizes == {"thumbnail": (43, 64), "preview": (200, 300)}  # turned upright


def test_jpeg_is_the_default_preview_format():
    assert RenderSettings().format == "jpeg"
