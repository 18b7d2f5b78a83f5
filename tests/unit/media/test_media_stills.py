"""New stills: AVIF, and the RAWs with containers of their own (CR3, RAF, ORF, RW2) or a
maker's TIFF (PEF); and exifread's stderr noise (issue 12, item 7)."""

from __future__ import annotations

import io
import subprocess
import sys
from datetime import datetime

import numpy as np
import pytest
from PIL import Image

from photo_pipeline.media import SUPPORTED_EXTENSIONS, CaptureTime, MediaError, read_metadata
from photo_pipeline.media.formats import MIME_TYPES
from photo_pipeline.media.render import RenderSettings, render_file
from tests.factories import photos

SMALL = RenderSettings(thumbnail_size=32, preview_size=64)
GPS = (52.5163, 13.3777, 34.0)
TAKEN = CaptureTime(datetime(2023, 7, 14, 10, 15, 30, 123000), 120, "exif_original")


def test_avif_reads_size_exif_and_renders(tmp_path) -> None:
    path = photos.avif(tmp_path / "a.avif", size=(120, 80), make="Apple", model="iPhone 16")
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.mime) == ("photo", "avif", "image/avif")
    assert (meta.width, meta.height) == (120, 80)
    assert (meta.make, meta.model, meta.taken) == ("Apple", "iPhone 16", TAKEN)
    result = render_file(path, SMALL)
    assert [r.width for r in result.renditions] == [32, 64]  # landscape, longest edge
    assert all(r.height < r.width for r in result.renditions)


def test_truncated_avif_is_corrupt(tmp_path) -> None:
    path = photos.avif(tmp_path / "a.avif", size=(120, 80))
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "corrupt_file"


@pytest.mark.parametrize(
    ("factory", "fmt", "mime", "make", "size"),
    [
        (photos.orf, "orf", "image/x-olympus-orf", "OLYMPUS CORPORATION", (96, 64)),
        (photos.rw2, "rw2", "image/x-panasonic-rw2", "Panasonic", (96, 64)),
        (photos.pef, "pef", "image/x-pentax-pef", "PENTAX", (96, 64)),
        (photos.raf, "raf", "image/x-fuji-raf", "FUJIFILM", (6240, 4160)),
        (photos.cr3, "cr3", "image/x-canon-cr3", "Canon", (6000, 4000)),
    ],
)
def test_raw_headers_give_format_camera_time_and_gps(tmp_path, factory, fmt, mime, make, size):
    path = factory(tmp_path, gps=(52.5163, 13.3777, 34.0))
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.mime) == ("photo", fmt, mime)
    assert meta.make == make
    assert (meta.width, meta.height) == size
    assert meta.taken == TAKEN
    assert meta.gps_latitude == pytest.approx(52.5163, abs=1e-4)
    assert meta.gps_altitude == pytest.approx(34.0)


def test_cr3_orientation_comes_from_cmt1(tmp_path) -> None:
    meta = read_metadata(photos.cr3(tmp_path, orientation=6))
    assert (meta.orientation, meta.width, meta.height) == (6, 4000, 6000)


def test_raw_max_pixels(tmp_path) -> None:
    with pytest.raises(MediaError) as caught:
        read_metadata(photos.cr3(tmp_path), max_pixels=6000 * 4000 - 1)
    assert caught.value.code == "too_many_pixels"


def test_cr3_without_canon_boxes_is_corrupt(tmp_path) -> None:
    path = tmp_path / "x.cr3"
    path.write_bytes(b"\x00\x00\x00\x18ftypcrx \x00\x00\x00\x01crx isom" + bytes(100))
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "corrupt_file"


def test_raf_with_damaged_preview_pointer_is_corrupt(tmp_path) -> None:
    path = photos.raf(tmp_path)
    data = bytearray(path.read_bytes())
    data[84:88] = (10**9).to_bytes(4, "big")  # the preview lies beyond the end
    path.write_bytes(bytes(data))
    with pytest.raises(MediaError) as caught:
        read_metadata(path)
    assert caught.value.code == "corrupt_file"


def test_raf_renders_from_its_embedded_preview(tmp_path) -> None:
    # LibRaw refuses the synthetic sensor data; the JPEG preview the header points at shows
    path = photos.raf(tmp_path, preview_size=(160, 120), seed=4)
    result = render_file(path, SMALL)
    thumbnail = Image.open(io.BytesIO(result.renditions[0].data))
    assert thumbnail.size == (32, 24)
    preview = photos.picture((160, 120), 4).resize((32, 24))
    assert _mean_difference(thumbnail, preview) < 25


def test_pef_renders_by_developing_half_size(tmp_path) -> None:
    # no embedded preview: LibRaw develops the Bayer data at half size
    result = render_file(photos.pef(tmp_path, size=(96, 64)), SMALL)
    assert [(r.width, r.height) for r in result.renditions] == [(32, 21), (48, 32)]


# make, model, file extension, the format read
RENDERED_MAKER_RAWS = [
    ("SAMSUNG", "NX1", "srw", "srw"),
    ("Hasselblad", "X2D 100C", "3fr", "3fr"),
    ("SEIKO EPSON CORP.", "R-D1", "erf", "erf"),
    ("Mamiya", "ZD", "mef", "mef"),
    ("EASTMAN KODAK COMPANY", "DCS Pro 14N", "dcr", "dcr"),
    ("NIKON", "COOLPIX P7800", "nrw", "nef"),
]
# LibRaw decodes these models' data its own way, which a synthetic Bayer TIFF is not
# (rendering them is left to real files): their headers are read all the same.
MAKER_RAWS = [
    *RENDERED_MAKER_RAWS,
    ("Kodak", "P712", "kdc", "dcr"),
    ("Leaf", "Aptus 75", "mos", "mos"),
    ("SONY", "DSC-R1", "sr2", "arw"),
]


@pytest.mark.parametrize(("make", "model", "extension", "fmt"), MAKER_RAWS)
def test_tiff_raws_of_more_makers_are_recognised(tmp_path, make, model, extension, fmt) -> None:
    path = photos.maker_raw(tmp_path / f"IMG_0001.{extension}", make=make, model=model, gps=GPS)
    assert path.suffix in SUPPORTED_EXTENSIONS  # the scan looks at it
    meta = read_metadata(path)
    assert (meta.kind, meta.format, meta.mime) == ("photo", fmt, MIME_TYPES[fmt])
    assert (meta.make, meta.model, meta.width, meta.height) == (make, model, 96, 64)
    assert meta.gps_latitude == pytest.approx(GPS[0], abs=1e-4)


@pytest.mark.parametrize(("make", "model", "extension", "fmt"), RENDERED_MAKER_RAWS)
def test_tiff_raws_of_more_makers_render(tmp_path, make, model, extension, fmt) -> None:
    path = photos.maker_raw(tmp_path / f"IMG_0001.{extension}", make=make, model=model)
    result = render_file(path, SMALL)  # no embedded preview: developed at half size
    assert [(r.width, r.height) for r in result.renditions] == [(32, 21), (48, 32)]


def test_a_scanners_tiff_from_a_raw_maker_stays_a_tiff(tmp_path) -> None:
    # Kodak made scanners too: an RGB TIFF with its name is no RAW.
    path = photos.tiff(
        tmp_path / "scan.tif", size=(40, 30), make="EASTMAN KODAK COMPANY", model="i2900"
    )
    assert read_metadata(path).format == "tiff"


@pytest.mark.parametrize("factory", [photos.orf, photos.rw2, photos.cr3])
def test_raw_that_libraw_refuses_is_corrupt_when_rendered(tmp_path, factory) -> None:
    with pytest.raises(MediaError) as caught:
        render_file(factory(tmp_path), SMALL)
    assert caught.value.code == "corrupt_file"


def _mean_difference(a: Image.Image, b: Image.Image) -> float:
    first, second = (np.asarray(image.convert("L"), dtype=np.int32) for image in (a, b))
    return float(np.abs(first - second).mean())


def test_png_without_exif_prints_nothing(tmp_path, capfd) -> None:
    # exifread logged "PNG file does not have exif data." for every screenshot; Python's
    # last-resort handler printed it to stderr. A fresh interpreter has no pytest logging
    # handlers, so it shows what a worker would print.
    path = tmp_path / "screenshot.png"
    photos.picture((64, 48)).save(path, "PNG")
    script = (
        "import sys; from photo_pipeline.media import read_metadata; read_metadata(sys.argv[1])"
    )
    subprocess.run([sys.executable, "-c", script, str(path)], check=True)
    out, err = capfd.readouterr()
    assert (out, err) == ("", "")
