"""Curation ↔ XMP (media.xmp): exiftool's answer read as curation, the arguments that
write it, and a sidecar written whole or not at all (real exiftool, temp folder)."""

from __future__ import annotations

import shutil

import pytest

from photo_pipeline.media.xmp import (
    XmpCuration,
    XmpWriteError,
    assignments,
    parse_curation,
    read_curation,
    temp_of,
    write_sidecar,
)

needs_exiftool = pytest.mark.skipif(shutil.which("exiftool") is None, reason="no exiftool")


def test_lightrooms_reject_and_colour_labels_are_told_apart():
    assert parse_curation({"XMP:XMP-xmp:Rating": -1}).rejected  # the XMP spec's reject
    assert parse_curation({"XMP:XMP-xmp:Label": "Rejected"}).rejected
    red = parse_curation({"XMP:XMP-xmp:Label": "Red", "XMP:XMP-xmp:Rating": 3})
    assert (red.rejected, red.rating, red.label) == (False, 3, "Red")
    assert parse_curation({"XMP:XMP-xmp:Rating": 9}).rating == 5


def test_keywords_are_the_hierarchical_paths_and_the_flat_names_not_in_them():
    found = parse_curation(
        {
            "XMP:XMP-lr:HierarchicalSubject": ["Places|France|Paris"],
            "XMP:XMP-dc:Subject": ["Places", "France", "paris", "sunset"],
        }
    )
    assert found.tags == ("Places|France|Paris", "sunset")
    assert parse_curation({"IPTC:Keywords": "beach"}).tags == ("beach",)


def test_a_colour_label_is_left_alone_and_our_reject_label_taken_off():
    wanted = XmpCuration(rating=0)
    assert not [a for a in assignments(wanted, XmpCuration(label="Red")) if "Label" in a]
    assert "-XMP-xmp:Label=" in assignments(wanted, XmpCuration(label="Rejected"))
    assert "-XMP-xmp:Rating=" in assignments(wanted, None)  # unrated: the tag goes


def test_album_names_are_escaped_in_the_collection_structure():
    [collection] = [
        a
        for a in assignments(XmpCuration(albums=("a,b}{|",)), None, {"a,b}{|": 7})
        if a.startswith("-XMP-mwg-coll:Collections=")
    ]
    assert collection == (
        "-XMP-mwg-coll:Collections={CollectionName=a|,b|}|{||,"
        "CollectionURI=urn:photo-pipeline:album:7}"
    )


@needs_exiftool
def test_a_sidecar_round_trips_and_keeps_what_it_does_not_own(tmp_path):
    sidecar = tmp_path / "IMG_1.CR2.xmp"
    sidecar.write_text(
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF '
        'xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description '
        'rdf:about="" xmlns:crs="http://ns.adobe.com/camera-raw-settings/1.0/" '
        'crs:Exposure2012="+1.00"/></rdf:RDF></x:xmpmeta>'
    )
    wanted = XmpCuration(4, True, True, ("Places|France|Paris", "sunset"), ("Trip, {2024}",))
    write_sidecar(str(sidecar), wanted, {"Trip, {2024}": 3})
    assert read_curation(str(sidecar)) == wanted
    assert b'crs:Exposure2012="+1.00"' in sidecar.read_bytes() or b">+1.00<" in (
        sidecar.read_bytes()
    )
    assert not (tmp_path / temp_of(str(sidecar))).exists()


@needs_exiftool
def test_a_sidecar_exiftool_cannot_edit_is_left_as_it_was(tmp_path):
    sidecar = tmp_path / "IMG_1.xmp"
    sidecar.write_bytes(b"not XMP at all")
    with pytest.raises(XmpWriteError):
        write_sidecar(str(sidecar), XmpCuration(rating=3))
    assert sidecar.read_bytes() == b"not XMP at all"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["IMG_1.xmp"]


@pytest.mark.parametrize("name", [b"caf\xe9.xmp", b"two\nlines.xmp"])
def test_a_sidecar_name_exiftool_cannot_be_given_fails_alone(tmp_path, name):
    """A Latin-1 name (from an old card) or a line break: refused with XmpWriteError,
    which fails its item, not a UnicodeEncodeError that failed the whole job."""
    import os

    sidecar = os.path.join(os.fsdecode(tmp_path), os.fsdecode(name))
    with pytest.raises(XmpWriteError, match="not UTF-8 or has a line break"):
        write_sidecar(sidecar, XmpCuration(rating=3))
    assert list(tmp_path.iterdir()) == []
