"""Google Takeout: the names it gives the JSON of each exported file, and which JSON
organize carries along with which photo, under which new name."""

from __future__ import annotations

import unicodedata

from photo_pipeline.media.takeout_names import takeout_names, takeout_owners, takeout_renamed


def test_the_names_takeout_gives_the_json_of_a_photo() -> None:
    assert takeout_names("IMG_1.JPG") == (
        "IMG_1.JPG.supplemental-metadata.json",
        "IMG_1.JPG.json",
        "IMG_1.json",
    )
    # a second photo of one name, and an edit, by their original's name
    assert takeout_names("IMG_1(2).JPG")[:2] == (
        "IMG_1.JPG.supplemental-metadata(2).json",
        "IMG_1.JPG(2).json",
    )
    # unless the parentheses are part of its name
    assert "Party (2).jpg.json" in takeout_names("Party (2).jpg")
    assert takeout_names("IMG_1-edited.JPG")[1] == "IMG_1.JPG.json"
    # cut at 46 characters before ".json"
    stem = "x" * 40
    assert takeout_names(f"{stem}.jpg") == (
        f"{stem}.jpg.s.json",
        f"{stem}.jpg.json",
        f"{stem}.json",
    )


def test_each_json_of_a_folder_describes_one_photo() -> None:
    names = ["IMG_1-edited.JPG", "IMG_1.JPG", "IMG_2(1).JPG", "IMG_2.JPG", "IMG_3.JPG"]
    present = {"IMG_1.JPG.json", "IMG_2.JPG(1).json", "IMG_2.JPG.json", "metadata.json"}
    assert takeout_owners(names, present) == {
        "IMG_1.JPG.json": "IMG_1.JPG",  # the original's, before its edit
        "IMG_2.JPG(1).json": "IMG_2(1).JPG",
        "IMG_2.JPG.json": "IMG_2.JPG",
    }
    # an edit alone has its original's JSON
    assert takeout_owners(["IMG_1-edited.JPG"], present) == {"IMG_1.JPG.json": "IMG_1-edited.JPG"}


def test_a_json_renamed_after_its_photo_is_found_beside_it_in_the_same_form() -> None:
    cases = [
        ("IMG_1.JPG.json", "IMG_1.JPG", "Trip 1.jpg", "Trip 1.jpg.json"),
        ("IMG_1.json", "IMG_1.JPG", "Trip 1.jpg", "Trip 1.json"),
        ("IMG_2.JPG(1).json", "IMG_2(1).JPG", "Trip 2.jpg", "Trip 2.jpg.json"),
        (
            "IMG_1.JPG.supplemental-metadata.json",
            "IMG_1-edited.JPG",
            "x" * 40 + ".jpg",
            "x" * 40 + ".jpg.s.json",
        ),
    ]
    for json_name, name, new_name, renamed in cases:
        assert takeout_renamed(json_name, name, new_name) == renamed
        assert takeout_owners([new_name], {renamed}) == {renamed: new_name}


def test_an_edit_in_any_export_language_reads_its_original_json() -> None:
    for edit in (
        "IMG_1-bearbeitet.jpg",
        unicodedata.normalize("NFD", "IMG_1-modifié.jpg"),  # as unzipped on macOS
        unicodedata.normalize("NFC", "IMG_1-modifié.jpg"),
        "IMG_1-ha editado.jpg",
        "IMG_1-editat.jpg",
        "IMG_1-編集済み.jpg",
        "IMG_1-EFFECTS.jpg",
    ):
        assert takeout_names(edit)[1] == "IMG_1.jpg.json", edit
    # a name that only looks like an edit's still finds a JSON of its own
    assert takeout_owners(["party-mix.jpg"], {"party-mix.jpg.json"}) == {
        "party-mix.jpg.json": "party-mix.jpg"
    }
    assert takeout_names("IMG_1-editedly.jpg")[1] == "IMG_1-editedly.jpg.json"
