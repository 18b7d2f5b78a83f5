"""Where a file's XMP sidecar may be: its own full name first, then its stem's."""

from photo_pipeline.media.sidecar import sidecar_names


def test_a_files_own_sidecar_comes_before_the_one_its_stem_shares() -> None:
    assert sidecar_names("IMG_1.CR2") == (
        "IMG_1.CR2.xmp",
        "IMG_1.CR2.XMP",
        "IMG_1.xmp",
        "IMG_1.XMP",
    )


def test_a_name_without_extension_has_only_its_own() -> None:
    assert sidecar_names("IMG_1") == ("IMG_1.xmp", "IMG_1.XMP")
