"""Make and model as a person reads them, from the spellings cameras and phones write."""

from __future__ import annotations

import pytest

from photo_pipeline.media.camera_names import clean, display_camera, display_make, display_model

# (EXIF Make, EXIF Model) -> what is shown
REAL = [
    (("Canon", "Canon DIGITAL IXUS 400"), "Canon DIGITAL IXUS 400"),
    (("Canon", "Canon EOS 5D Mark IV"), "Canon EOS 5D Mark IV"),
    (("NIKON CORPORATION", "NIKON D850"), "Nikon D850"),
    (("NIKON", "E4500"), "Nikon E4500"),
    (("OLYMPUS IMAGING CORP.", "E-M5"), "Olympus E-M5"),
    (("OLYMPUS OPTICAL CO.,LTD", "C750UZ"), "Olympus C750UZ"),
    (("SONY", "ILCE-7M3"), "Sony ILCE-7M3"),
    (
        ("EASTMAN KODAK COMPANY", "KODAK EASYSHARE C713 ZOOM DIGITAL CAMERA"),
        "Kodak EASYSHARE C713 ZOOM DIGITAL CAMERA",
    ),
    (("samsung", "SM-G991B"), "Samsung SM-G991B"),
    (("SAMSUNG", "SAMSUNG ES70"), "Samsung ES70"),
    (("Apple", "iPhone 12 Pro"), "Apple iPhone 12 Pro"),
    (("Google", "Pixel 7"), "Google Pixel 7"),
    (("FUJIFILM", "X-T3"), "Fujifilm X-T3"),
    (("FUJI PHOTO FILM CO., LTD.", "FinePix S5000"), "Fujifilm FinePix S5000"),
    (("PENTAX Corporation", "PENTAX K10D"), "Pentax K10D"),
    (("RICOH IMAGING COMPANY, LTD.", "PENTAX K-3 II"), "Pentax K-3 II"),
    (("RICOH IMAGING COMPANY, LTD.", "RICOH GR III"), "Ricoh GR III"),
    (("Panasonic", "DMC-GH4"), "Panasonic DMC-GH4"),
    (("LEICA CAMERA AG", "LEICA Q2"), "Leica Q2"),
    (("HUAWEI", "ELE-L29"), "Huawei ELE-L29"),
    (("Xiaomi", "Redmi Note 8 Pro"), "Xiaomi Redmi Note 8 Pro"),
    (("OnePlus", "ONEPLUS A6003"), "OnePlus A6003"),
    (("motorola", "moto g(7)"), "Motorola moto g(7)"),
    (("HMD Global", "Nokia 7.2"), "Nokia 7.2"),
    (("GoPro", "HERO9 Black"), "GoPro HERO9 Black"),
]


@pytest.mark.parametrize(("raw", "shown"), REAL, ids=[" / ".join(r) for r, _ in REAL])
def test_real_spellings_read_as_a_person_names_the_camera(raw, shown):
    assert display_camera(*raw) == shown


def test_the_make_is_not_repeated_in_the_model():
    assert display_model("Canon", "Canon DIGITAL IXUS") == "DIGITAL IXUS"
    assert display_make("Canon", "Canon DIGITAL IXUS") == "Canon"
    assert display_camera("Canon", "Canon DIGITAL IXUS") == "Canon DIGITAL IXUS"
    # A word that only starts like the make stays: "Canonet" is a model of its own.
    assert display_model("Canon", "Canonet QL17") == "Canonet QL17"
    # A model that is only the make says nothing more.
    assert display_camera("SONY", "Sony") == "Sony"


def test_nul_padding_and_controls_are_cut():
    # EXIF ASCII ends at the NUL: the rest is the remainder of a fixed-size buffer.
    assert display_model("WWL", "ION230\x00F") == "ION230"
    assert display_camera("WWL", "ION230\x00F") == "WWL ION230"
    assert display_camera("Canon\x00\x00\x00", "  Canon PowerShot   A70  ") == "Canon PowerShot A70"
    assert clean("\x00") is None and clean("   ") is None and clean(None) is None
    assert clean("EOS\tR5\x1b") == "EOS R5"


def test_unknown_makes_are_kept_as_written_and_missing_parts_are_none():
    assert display_make("Acme Optics Ltd.") == "Acme Optics Ltd."
    assert display_camera(None, "ION230") == "ION230"
    assert display_camera("Nikon", None) == "Nikon"
    assert display_camera(None, None) is None
    assert display_make(None) is None and display_model("Canon", None) is None


def test_exif_text_is_read_up_to_its_nul():
    # What the catalogue stores: PostgreSQL takes no NUL, and what follows one in an
    # EXIF ASCII field is the rest of its buffer.
    from photo_pipeline.media.tags import as_text

    assert as_text("ION230\x00F") == "ION230"
    assert as_text(b"Canon\x00\x00\x00\x00") == "Canon"
    assert as_text("\x00\x00Canon ") == "Canon"
    assert as_text("\x00") is None
