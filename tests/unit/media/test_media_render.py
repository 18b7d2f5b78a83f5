"""media.render on real files: sizes, orientation, colour, no metadata, bad input."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
import pyvips
from PIL import Image, ImageCms

from photo_pipeline.media import MediaError
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories import photos

SMALL = RenderSettings(thumbnail_size=64, preview_size=150)
# The four quadrants of the reference picture, as displayed: red, green / blue, white.
QUADRANTS = {
    (0, 0): (230, 20, 20),
    (1, 0): (20, 200, 20),
    (0, 1): (20, 20, 230),
    (1, 1): (250,) * 3,
}
# How Pillow turns stored pixels into displayed ones for each EXIF orientation, and so
# how the stored pixels of a photo that must *display* as the reference are made.
DISPLAY = {
    2: Image.Transpose.FLIP_LEFT_RIGHT,
    3: Image.Transpose.ROTATE_180,
    4: Image.Transpose.FLIP_TOP_BOTTOM,
    5: Image.Transpose.TRANSPOSE,
    6: Image.Transpose.ROTATE_270,
    7: Image.Transpose.TRANSVERSE,
    8: Image.Transpose.ROTATE_90,
}
UNDO = {**DISPLAY, 6: Image.Transpose.ROTATE_90, 8: Image.Transpose.ROTATE_270}


def reference(size: tuple[int, int] = (300, 200)) -> Image.Image:
    image = Image.new("RGB", size)
    width, height = size
    for (qx, qy), colour in QUADRANTS.items():
        image.paste(
            colour,
            (qx * width // 2, qy * height // 2, (qx + 1) * width // 2, (qy + 1) * height // 2),
        )
    return image


def decoded(data: bytes) -> Image.Image:
    image = Image.open(io.BytesIO(data))
    image.load()
    return image


def assert_shows_reference(image: Image.Image) -> None:
    width, height = image.size
    rgb = image.convert("RGB")
    for (qx, qy), colour in QUADRANTS.items():
        pixel = rgb.getpixel((width * (2 * qx + 1) // 4, height * (2 * qy + 1) // 4))
        assert all(abs(a - b) <= 12 for a, b in zip(pixel, colour, strict=True)), (qx, qy, pixel)


def assert_no_metadata(image: Image.Image) -> None:
    assert not image.getexif()
    assert not {"exif", "xmp", "icc_profile"} & set(image.info)


@pytest.mark.parametrize("fmt", ["webp", "jpeg"])
@pytest.mark.parametrize("orientation", range(1, 9))
def test_every_orientation_renders_upright_at_the_right_size(tmp_path, orientation, fmt):
    stored = reference()
    if orientation in UNDO:
        stored = stored.transpose(UNDO[orientation])
    exif = photos.build_exif(orientation=orientation, gps=(48.85, 2.29, 35.0))
    path = tmp_path / "photo.jpg"
    stored.save(path, "JPEG", quality=95, exif=exif)

    result = render_file(path, RenderSettings(thumbnail_size=64, preview_size=150, format=fmt))

    sizes = {r.kind: (r.width, r.height) for r in result.renditions}
    assert sizes == {"thumbnail": (64, 43), "preview": (150, 100)}
    for rendition in result.renditions:
        image = decoded(rendition.data)
        assert image.format == fmt.upper()
        assert image.size == (rendition.width, rendition.height)
        assert_shows_reference(image)
        assert_no_metadata(image)  # no EXIF, no GPS, no orientation left to apply


def test_small_originals_are_not_enlarged(tmp_path):
    path = photos.jpeg(tmp_path, size=(100, 80))
    result = render_file(path, SMALL)
    assert {(r.kind, r.width, r.height) for r in result.renditions} == {
        ("thumbnail", 64, 51),
        ("preview", 100, 80),
    }


def test_embedded_profile_is_converted_to_srgb(tmp_path):
    # pixels (200, 60, 40) in Display P3 are a more saturated red in sRGB
    p3 = pyvips.Image.black(96, 64).new_from_image([200, 60, 40]).cast("uchar")
    p3 = p3.copy(interpretation="srgb").icc_transform("p3")  # borrow libvips' P3 profile
    profile = p3.get("icc-profile-data")
    tagged = p3.new_from_image([200, 60, 40]).cast("uchar").copy(interpretation="srgb")
    tagged.set_type(pyvips.GValue.blob_type, "icc-profile-data", profile)
    path = tmp_path / "p3.jpg"
    tagged.jpegsave(str(path), Q=98, keep="icc")
    expected = ImageCms.applyTransform(
        Image.new("RGB", (1, 1), (200, 60, 40)),
        ImageCms.buildTransform(
            ImageCms.ImageCmsProfile(io.BytesIO(profile)),
            ImageCms.createProfile("sRGB"),
            "RGB",
            "RGB",
        ),
    ).getpixel((0, 0))
    assert max(abs(a - b) for a, b in zip(expected, (200, 60, 40), strict=True)) > 10

    result = render_file(path, SMALL)

    assert result.warnings == ()
    for rendition in result.renditions:
        image = decoded(rendition.data)
        assert_no_metadata(image)  # untagged: sRGB
        pixel = image.convert("RGB").getpixel((image.width // 2, image.height // 2))
        assert all(abs(a - b) <= 4 for a, b in zip(pixel, expected, strict=True)), pixel


def test_broken_icc_profile_renders_as_srgb_with_a_warning(tmp_path):
    path = tmp_path / "broken-icc.jpg"
    reference().save(path, "JPEG", quality=95, icc_profile=b"not a profile" * 40)

    result = render_file(path, SMALL)

    assert [code for code, _ in result.warnings] == ["broken_icc_profile"]
    for rendition in result.renditions:
        assert_shows_reference(decoded(rendition.data))


@pytest.mark.parametrize(
    "make",
    [
        lambda p: photos.png(p),
        lambda p: photos.tiff(p),
        lambda p: photos.webp(p),
        lambda p: photos.heic(p, orientation=6),
        lambda p: photos.dng(p),
        lambda p: photos.cr2(p),
    ],
    ids=["png", "tiff", "webp", "heic", "dng", "cr2"],
)
def test_other_formats_render(tmp_path, make):
    path = make(tmp_path)
    result = render_file(path, SMALL)
    for rendition in result.renditions:
        image = decoded(rendition.data)
        assert max(image.size) <= {"thumbnail": 64, "preview": 150}[rendition.kind]
        assert_no_metadata(image)


def test_png_with_alpha_keeps_it_in_webp_and_is_flattened_in_jpeg(tmp_path):
    path = tmp_path / "alpha.png"
    Image.new("RGBA", (120, 80), (10, 200, 10, 0)).save(path)
    webp = render_file(path, RenderSettings(64, 150, format="webp")).renditions[0]
    assert decoded(webp.data).mode == "RGBA"
    jpeg = render_file(path, RenderSettings(64, 150, format="jpeg")).renditions[0]
    assert decoded(jpeg.data).mode == "RGB"


@pytest.mark.parametrize(
    ("make", "code"),
    [
        (lambda p: photos.truncated_jpeg(p, size=(320, 240)), "corrupt_file"),
        (lambda p: photos.text_as_jpeg(p), "unsupported_format"),
        (lambda p: photos.empty(p), "empty_file"),
        (lambda p: Path(p) / "missing.jpg", "file_vanished"),
    ],
    ids=["truncated", "text", "empty", "missing"],
)
def test_bad_input_raises_a_clear_code(tmp_path, make, code):
    with pytest.raises(MediaError) as raised:
        render_file(make(tmp_path), SMALL)
    assert raised.value.code == code


def test_pixel_limit_refuses_before_decoding(tmp_path):
    path = photos.jpeg(tmp_path, size=(400, 300))
    with pytest.raises(MediaError) as raised:
        render_file(path, RenderSettings(64, 150, max_pixels=400 * 300 - 1))
    assert raised.value.code == "too_many_pixels"


def test_settings_are_validated_and_fingerprinted():
    assert RenderSettings().fingerprint() == RenderSettings().fingerprint()
    assert RenderSettings(quality=81).fingerprint() != RenderSettings().fingerprint()
    assert RenderSettings(format="webp").fingerprint() != RenderSettings().fingerprint()
    assert RenderSettings(max_pixels=10).fingerprint() == RenderSettings().fingerprint()
    for bad in ({"format": "gif"}, {"quality": 0}, {"thumbnail_size": 8}):
        with pytest.raises(ValueError, match=next(iter(bad))):
            RenderSettings(**bad)
    assert RenderSettings.from_params(RenderSettings().to_params()) == RenderSettings()


def test_a_heic_whose_image_data_is_gone_is_a_corrupt_file(tmp_path: Path) -> None:
    """Its boxes intact, its coded image zeroed (as exiftool's sample QuickTime.heic,
    whose pixels were stripped): libheif's decoder ends with EOFError, which is the
    file's fault (corrupt_file), not a bug in photo-pipeline's readers."""
    path = photos.heic(tmp_path / "stripped.heic", size=(640, 480), seed=1)
    data = bytearray(path.read_bytes())
    payload = data.find(b"mdat") + 4
    data[payload:] = bytes(len(data) - payload)
    path.write_bytes(bytes(data))
    with pytest.raises(MediaError) as caught:
        render_file(path, RenderSettings())
    assert caught.value.code == "corrupt_file"
