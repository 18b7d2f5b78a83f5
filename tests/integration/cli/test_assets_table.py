"""The `assets` table says what a person needs: file name, local time, how far the
date can be trusted, place (district, city, country), the camera as people name it;
sorted by the local time it shows (or by instant, or newest added), every order paged
by keyset."""

from __future__ import annotations

import json
import os
from datetime import UTC, datetime

import pytest

from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos

# Tokyo is 7 hours ahead of Berlin in May: 10:00 there (01:00 UTC) is before Berlin's
# 08:00 (06:00 UTC). By instant Tokyo comes first; by the clocks shown, Berlin.
TRIP = {
    "tokyo.jpg": ("2024:05:01 10:00:00", (35.6938, 139.7034, 10.0), "NIKON CORPORATION",
                  "NIKON D850"),
    "berlin.jpg": ("2024:05:01 08:00:00", (52.5200, 13.4050, 10.0), "Canon",
                   "Canon DIGITAL IXUS 400"),
}  # fmt: skip


@pytest.fixture
def imported(cli, tmp_path):
    root = tmp_path / "trip"
    for n, (name, (taken, gps, make, model)) in enumerate(TRIP.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, taken=taken, offset=None,
                    subsec=None, gps=gps, make=make, model=model)  # fmt: skip
    copied = photos.jpeg(root / "IMG_0300.jpg", size=(32, 24), seed=9, taken=None,
                         offset=None, make="WWL", model="ION230\x00F")  # fmt: skip
    moment = datetime(2026, 12, 1, 19, 21, 14, tzinfo=UTC).timestamp()
    os.utime(copied, (moment, moment))
    assert cli("import", str(root), "--wait", "--json")[0] == 0
    return root


def test_the_table_names_file_time_place_and_camera_in_local_time_order(cli, imported):
    code, out, _ = cli("assets")
    assert code == 0
    lines = out.splitlines()
    header = next(line for line in lines if "taken" in line)
    for column in ("name", "taken", "dated by", "place", "camera"):
        assert column in header, header
    berlin = next(line for line in lines if "berlin.jpg" in line)
    tokyo = next(line for line in lines if "tokyo.jpg" in line)
    copied = next(line for line in lines if "IMG_0300.jpg" in line)
    assert lines.index(berlin) < lines.index(tokyo)  # 08:00 before 10:00, as shown
    assert "2024-05-01 08:00:00" in berlin and "2024-05-01 10:00:00" in tokyo
    assert "Mitte, Berlin, Germany" in berlin and "Kabukicho, Tokyo, Japan" in tokyo
    assert "Canon DIGITAL IXUS 400" in berlin and "Canon Canon" not in out
    assert "Nikon D850" in tokyo and "NIKON" not in out
    assert "WWL ION230" in copied and "\\x00" not in out  # cut at the NUL
    assert "undated" in copied and "camera" in berlin

    code, out, _ = cli("assets", "--sort", "taken-utc")
    assert code == 0 and out.index("tokyo.jpg") < out.index("berlin.jpg")  # by instant
    code, _, _ = cli("assets", "--sort", "size")
    assert code == 2


def test_the_json_keeps_raw_names_beside_the_shown_ones(cli, imported):
    code, out, _ = cli("assets", "--json")
    assert code == 0
    rows = {row["name"]: row for row in json.loads(out)}
    assert list(rows) == ["berlin.jpg", "tokyo.jpg", "IMG_0300.jpg"]  # by local time
    tokyo = rows["tokyo.jpg"]
    assert (tokyo["make"], tokyo["model"], tokyo["camera"]) == (
        "NIKON CORPORATION",
        "NIKON D850",
        "Nikon D850",
    )
    assert tokyo["taken_confidence"] == "camera" and not tokyo["undated"]
    assert tokyo["file"]["path"] == "tokyo.jpg" and tokyo["file"]["source"] == str(imported)
    assert rows["IMG_0300.jpg"]["taken_confidence"] == "file_time"
    assert rows["IMG_0300.jpg"]["undated"] is True


@pytest.mark.parametrize("sort", ["taken", "taken-desc", "taken-utc", "added"])
def test_every_order_pages_by_keyset_to_the_same_listing(cli, imported, session_factory, sort):
    from photo_pipeline.pipeline.library.ordering import BadCursor, Order

    catalog = Catalog(session_factory)
    whole = [row["id"] for row in catalog.iter_assets(sort=sort)]
    paged = [row["id"] for row in catalog.iter_assets(sort=sort, page_size=1)]
    assert paged == whole and len(whole) == 3
    if sort == "added":
        assert whole == sorted(whole, reverse=True)  # newest first
    if sort == "taken-desc":  # the timeline's order: "taken" backwards
        assert whole == [row["id"] for row in catalog.iter_assets(sort="taken")][::-1]
    with pytest.raises(BadCursor):  # a cursor of one order is refused by another
        Order("taken").decode(Order("added").encode({"id": 1}))
