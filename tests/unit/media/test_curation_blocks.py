"""media.curation_blocks: a photo's headers say "no XMP, no IPTC" only when exiftool
finds none either (real files from the factories, real exiftool)."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from photo_pipeline.media.curation_blocks import may_hold_curation
from photo_pipeline.media.xmp import read_curation
from tests.factories import photos

needs_exiftool = pytest.mark.skipif(shutil.which("exiftool") is None, reason="no exiftool")


def _exiftool(path, *assignments: str) -> None:
    subprocess.run(["exiftool", "-q", "-overwrite_original", *assignments, str(path)], check=True)


def test_plain_jpegs_and_pngs_hold_nothing(tmp_path):
    assert not may_hold_curation(str(photos.jpeg(tmp_path / "a.jpg")))
    assert not may_hold_curation(str(photos.jpeg(tmp_path / "b.jpg", taken=None, make=None)))
    assert not may_hold_curation(str(photos.png(tmp_path / "c.png")))


def test_other_formats_and_damaged_headers_may_hold_it(tmp_path):
    assert may_hold_curation(str(photos.tiff(tmp_path / "a.tif")))
    assert may_hold_curation(str(photos.webp(tmp_path / "a.webp")))
    assert may_hold_curation(str(photos.truncated_jpeg(tmp_path / "cut.jpg", keep=0.01)))
    (tmp_path / "soi.jpg").write_bytes(b"\xff\xd8")
    assert may_hold_curation(str(tmp_path / "soi.jpg"))
    (tmp_path / "png.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert may_hold_curation(str(tmp_path / "png.png"))


def test_a_jpeg_with_a_trailer_may_hold_it(tmp_path):
    photo = photos.jpeg(tmp_path / "a.jpg")
    with photo.open("ab") as fp:
        fp.write(b"FotoStation-like trailer")
    assert may_hold_curation(str(photo))


@needs_exiftool
@pytest.mark.parametrize(
    "assignment",
    ["-XMP-xmp:Rating=3", "-IPTC:Keywords=beach", "-XMP-dc:Subject=beach"],
)
@pytest.mark.parametrize("kind", ["jpeg", "png"])
def test_whatever_exiftool_reads_back_the_headers_show(tmp_path, kind, assignment):
    photo = getattr(photos, kind)(tmp_path / f"a.{kind}")
    _exiftool(photo, assignment)
    found = read_curation(str(photo), embedded=True)
    assert found is not None and (found.rating or found.tags)  # exiftool reads it back
    assert may_hold_curation(str(photo))


def test_xmp_or_iptc_in_the_exif_block_is_noticed(tmp_path):
    """XMP as the IFD0 tag ApplicationNotes, IPTC as IPTC-NAA (as in a TIFF), inside a
    JPEG's or a PNG's EXIF."""
    photo = photos.jpeg(tmp_path / "a.jpg", extra_base={0x02BC: b"<x:xmpmeta/>"})
    assert may_hold_curation(str(photo))
    iptc = photos.png(tmp_path / "a.png", extra_base={0x83BB: b"\x1c\x02\x19\x00\x05beach"})
    assert may_hold_curation(str(iptc))
