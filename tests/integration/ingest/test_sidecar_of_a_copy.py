"""A photo catalogued first from a copy without a sidecar, then found again beside the
user's XMP sidecar (a backup of the card, and the folder the editor worked in): the
asset takes the sidecar's date, whichever of its names the sidecar has (Lightroom's
``IMG_1.xmp``, darktable's ``IMG_1.JPG.xmp``, in any case)."""

from __future__ import annotations

import os
import shutil

import pytest
from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import assets
from tests.factories import photos
from tests.factories.dated import require_exiftool, xmp_packet
from tests.support.import_jobs import run_import


@pytest.mark.parametrize(
    "sidecar_name", ["IMG_1.xmp", "IMG_1.JPG.xmp", "img_1.XMP", "IMG_1.jpg.XMP"]
)
def test_a_copy_beside_its_sidecar_dates_the_asset_first_read_without(
    session_factory, tmp_path, sidecar_name
) -> None:
    require_exiftool()
    backup, edited = tmp_path / "backup", tmp_path / "edited"
    # No date of its own: without its sidecar it has only its mtime.
    photos.jpeg(backup / "IMG_1.JPG", size=(64, 48), seed=1, taken=None, offset=None)
    edited.mkdir()
    shutil.copy2(backup / "IMG_1.JPG", edited / "IMG_1.JPG")
    (edited / sidecar_name).write_bytes(
        xmp_packet(exif_DateTimeOriginal="2019-04-05T12:34:56+02:00")
    )
    run_import(session_factory, backup)
    assert the_asset(session_factory)["taken_source"] == "mtime"

    run_import(session_factory, edited)
    asset = the_asset(session_factory)
    assert (asset["taken_source"], asset["taken_local"]) == ("xmp_sidecar", "2019-04-05T12:34:56")
    assert asset["taken_offset_minutes"] == 120

    # The copy without a sidecar, read again, does not take the date back.
    os.utime(backup / "IMG_1.JPG", ns=(1, 1))
    run_import(session_factory, backup)
    assert the_asset(session_factory)["taken_source"] == "xmp_sidecar"


def the_asset(session_factory) -> dict:
    """The one asset of the catalogue (one content, however many files)."""
    with read_session(session_factory) as session:
        [asset] = session.execute(select(assets)).mappings().all()
    return dict(asset)
