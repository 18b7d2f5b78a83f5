"""Device and file names from an upload's client become one safe path component."""

from __future__ import annotations

import os

import pytest

from photo_pipeline.pipeline.uploads.names import device_folder, file_name, with_suffix


@pytest.mark.parametrize(
    ("sent", "name"),
    [
        ("IMG_0001.JPG", "IMG_0001.JPG"),
        ("../../etc/passwd", "passwd"),
        ("C:\\Users\\anna\\DSC_1.jpg", "DSC_1.jpg"),
        (".bashrc", "bashrc"),
        ("...", "upload"),
        ("", "upload"),
        (None, "upload"),
        ("dir/", "upload"),
        ("a\x00b\x7f.jpg", "ab.jpg"),
        ("caf\u0065\u0301.jpg", "café.jpg"),  # NFC: one é, as a Mac sends it decomposed
        ("\udc80.jpg", "?.jpg"),  # a lone surrogate is no UTF-8
    ],
)
def test_file_names_keep_only_their_last_plain_component(sent: str | None, name: str) -> None:
    assert file_name(sent) == name


def test_long_file_names_are_cut_to_fit_with_their_extension() -> None:
    name = file_name("é" * 300 + ".jpeg")
    assert name.endswith(".jpeg") and len(name.encode()) <= 240
    assert len(with_suffix(name, 9999).encode()) <= os.pathconf("/", "PC_NAME_MAX")


@pytest.mark.parametrize(
    ("sent", "folder"),
    [
        ("Anna's phone", "Anna's phone"),
        ("../../x", "x"),
        ("..", "browser"),
        (".pp-uploads", "pp-uploads"),
        ("a/b\\c", "a-b-c"),
        ("  iPhone\t15  ", "iPhone 15"),
        ("", "browser"),
        ("x" * 100, "x" * 64),
    ],
)
def test_device_names_become_one_visible_folder(sent: str, folder: str) -> None:
    assert device_folder(sent) == folder


def test_a_taken_name_gets_a_numbered_suffix_before_its_extension() -> None:
    assert with_suffix("IMG_1.jpg", 2) == "IMG_1 (2).jpg"
    assert with_suffix("notes", 3) == "notes (3)"
