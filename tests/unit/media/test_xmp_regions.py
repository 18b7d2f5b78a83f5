"""MWG regions (media.xmp_regions): boxes between the upright and the stored frame,
overlap and matching, exiftool's answer read (MWG, else MP) and what a write keeps."""

from __future__ import annotations

import pytest

from photo_pipeline.media.xmp_regions import (
    Region,
    WantedRegions,
    match,
    overlap,
    parse_regions,
    serialized,
    stored_size,
    to_stored,
    to_upright,
)


@pytest.mark.parametrize("orientation", range(1, 9))
def test_a_box_goes_to_the_stored_frame_and_back(orientation):
    box = (0.1, 0.2, 0.3, 0.15)
    there = to_stored(box, orientation)
    assert to_upright(there, orientation) == pytest.approx(box)


def test_a_photo_turned_right_has_its_boxes_in_the_frame_as_stored():
    # Orientation 6: the stored image's top is the upright one's right side.
    left, top, width, height = to_stored((0.7, 0.1, 0.2, 0.1), 6)
    assert (left + width / 2, top + height / 2) == pytest.approx((0.15, 0.2))
    assert (width, height) == pytest.approx((0.1, 0.2))
    assert stored_size(3000, 4000, 6) == (4000, 3000)


def test_overlap_and_one_to_one_matching():
    face = (0.4, 0.4, 0.2, 0.2)
    assert overlap(face, face) == pytest.approx(1.0)
    assert overlap(face, (0.0, 0.0, 0.1, 0.1)) == 0.0
    larger = (0.35, 0.35, 0.3, 0.3)  # a head box half as large again
    assert overlap(face, larger) == pytest.approx(0.04 / 0.09)
    assert match([larger, (0.0, 0.0, 0.1, 0.1)], [(0.0, 0.0, 0.5, 0.5), face]) == {0: 1}


def test_mwg_is_read_and_mp_only_without_it():
    mwg = {
        "XMP:XMP-mwg-rs:RegionInfo": {
            "AppliedToDimensions": {"W": 400, "H": 300, "Unit": "pixel"},
            "RegionList": [
                {
                    "Area": {"X": 0.5, "Y": 0.5, "W": 0.2, "H": 0.4, "Unit": "normalized"},
                    "Name": "Ann",
                    "Type": "Face",
                },
                {"Area": {"X": 0.1, "Y": 0.1, "Unit": "normalized"}, "Type": "Focus"},
            ],
        },
        "XMP:XMP-MP:RegionInfoMP": {
            "Regions": [{"PersonDisplayName": "X", "Rectangle": "0, 0, 1, 1"}]
        },
    }
    found = parse_regions(mwg)
    assert [r.name for r in found.named_faces()] == ["Ann"]
    assert found.named_faces()[0].box == pytest.approx((0.4, 0.3, 0.2, 0.4))
    mp = parse_regions({"XMP:XMP-MP:RegionInfoMP": mwg["XMP:XMP-MP:RegionInfoMP"]})
    assert mp.record() == [{"name": "X", "x": 0.5, "y": 0.5, "w": 1.0, "h": 1.0}]


def test_a_write_keeps_other_regions_and_replaces_only_ours():
    item = {
        "Area": {"X": 0.5, "Y": 0.5, "W": 0.2, "H": 0.2, "Unit": "normalized"},
        "Name": "Old",
        "Type": "Face",
    }
    pet = {
        "Area": {"X": 0.1, "Y": 0.1, "W": 0.1, "H": 0.1, "Unit": "normalized"},
        "Name": "Rex",
        "Type": "Pet",
    }
    found = parse_regions({"XMP:XMP-mwg-rs:RegionInfo": {"RegionList": [item, pet]}})
    ours = WantedRegions(
        (Region("New", (0.4, 0.4, 0.2, 0.2)),), ((0.4, 0.4, 0.2, 0.2),), (400, 300)
    )
    assert [r["name"] for r in ours.expected(found)] == ["New"]
    [arg] = ours.assignments(found)
    assert "Name=Rex" in arg and "Name=New" in arg and "Old" not in arg
    same = WantedRegions((Region("Old", (0.41, 0.4, 0.2, 0.2)),), ((0.4, 0.4, 0.2, 0.2),), (4, 3))
    assert same.assignments(found) == []  # the name is there already: nothing to write
    assert serialized({"Name": "A, {B}"}) == "{Name=A|, |{B|}}"
