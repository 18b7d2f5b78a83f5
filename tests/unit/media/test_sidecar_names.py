"""Where a file's XMP sidecar may be: its own full name first, then its stem's, in any case."""

from photo_pipeline.media.sidecar import sidecar_names
from photo_pipeline.pipeline.ingest.sidecars import beside_changed_sidecars


def test_a_files_own_sidecar_comes_before_the_one_its_stem_shares() -> None:
    assert sidecar_names("IMG_1.CR2") == (
        "IMG_1.CR2.xmp",
        "IMG_1.CR2.XMP",
        "IMG_1.xmp",
        "IMG_1.XMP",
    )


def test_a_name_without_extension_has_only_its_own() -> None:
    assert sidecar_names("IMG_1") == ("IMG_1.xmp", "IMG_1.XMP")


def test_a_changed_sidecar_in_another_case_sends_its_photo_to_be_read_again(tmp_path):
    for name in ("IMG_1.JPG", "IMG_2.JPG", "img_1.xmp"):
        (tmp_path / name).write_bytes(b"")
    assert beside_changed_sidecars(str(tmp_path), {"img_1.xmp"}) == ["IMG_1.JPG"]
    assert beside_changed_sidecars(str(tmp_path), {"IMG_1.jpg.json"}) == []  # Takeout: exact
