"""An import of a Google Takeout export dates the photos that lost their own date by
the JSON beside each (by every name Takeout gives it) and places them by its position,
on both databases; a photo's own date still wins, and a JSON that is not one is passed
over."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.near import similar  # noqa: F401  (their job types)
from tests.factories import photos
from tests.support.import_jobs import catalogue_by_path, run_import

PARIS = {"latitude": 48.8584, "longitude": 2.2945, "altitude": 35.0}
NOWHERE = {"latitude": 0.0, "longitude": 0.0, "altitude": 0.0}
LONG_NAME = "a_very_long_file_name_from_a_messaging_app_01.jpg"


def takeout_json(path, taken: datetime, where: dict[str, float] = NOWHERE) -> None:
    """What Takeout writes beside a photo (the fields read, and some it also has)."""
    document = {
        "title": path.name,
        "photoTakenTime": {"timestamp": str(int(taken.timestamp())), "formatted": "…"},
        "creationTime": {"timestamp": "1700000000", "formatted": "…"},
        "geoData": {**where, "latitudeSpan": 0.0, "longitudeSpan": 0.0},
    }
    path.write_text(json.dumps(document))


def undated_jpeg(path, seed: int) -> None:
    photos.jpeg(path, size=(64, 48), seed=seed, taken=None, offset=None, subsec=None)


def test_a_takeout_export_is_dated_and_placed_by_its_json(session_factory, tmp_path) -> None:
    folder = tmp_path / "Takeout" / "Google Photos" / "Photos from 2019"
    undated_jpeg(folder / "IMG_0001.JPG", 1)
    takeout_json(folder / "IMG_0001.JPG.json", datetime(2019, 4, 5, 12, 34, 56, tzinfo=UTC), PARIS)
    photos.png(folder / "drawing.png", size=(64, 48), seed=2, taken=None)
    takeout_json(
        folder / "drawing.png.supplemental-metadata.json", datetime(2019, 6, 1, 8, tzinfo=UTC)
    )
    undated_jpeg(folder / LONG_NAME, 3)
    truncated = f"{LONG_NAME}.supplemental-metadata"[:46] + ".json"
    takeout_json(folder / truncated, datetime(2019, 7, 2, 9, tzinfo=UTC))
    undated_jpeg(folder / "IMG_0004.JPG", 4)
    takeout_json(folder / "IMG_0004.JPG.json", datetime(2019, 8, 3, 10, tzinfo=UTC))
    undated_jpeg(folder / "IMG_0004(1).JPG", 5)
    takeout_json(folder / "IMG_0004.JPG(1).json", datetime(2019, 9, 4, 11, tzinfo=UTC))
    undated_jpeg(folder / "IMG_0004-edited.JPG", 6)  # its original's JSON
    photos.jpeg(folder / "IMG_0007.JPG", size=(64, 48), seed=7)  # dated by its camera
    takeout_json(folder / "IMG_0007.JPG.json", datetime(2000, 1, 1, tzinfo=UTC), PARIS)
    undated_jpeg(folder / "IMG_0008.JPG", 8)
    (folder / "IMG_0008.JPG.json").write_text("{not json")

    run_import(session_factory, folder)
    rows = catalogue_by_path(Catalog(session_factory))

    def dated(name: str) -> tuple[str, str, datetime | None]:
        asset = rows[name]["asset"]
        return asset["taken_source"], asset["taken_local"], asset["taken_utc"]

    # UTC in the JSON, local time where the photo was taken (Paris: UTC+2 in April)
    first = rows["IMG_0001.JPG"]["asset"]
    assert dated("IMG_0001.JPG") == (
        "takeout",
        "2019-04-05T14:34:56",
        datetime(2019, 4, 5, 12, 34, 56, tzinfo=UTC),
    )
    assert (first["gps_latitude"], first["gps_longitude"]) == pytest.approx((48.8584, 2.2945))
    assert (first["tz_name"], first["country_code"]) == ("Europe/Paris", "FR")
    # no position (0, 0): the time stays UTC
    assert dated("drawing.png") == (
        "takeout",
        "2019-06-01T08:00:00",
        datetime(2019, 6, 1, 8, tzinfo=UTC),
    )
    assert rows["drawing.png"]["asset"]["gps_latitude"] is None
    assert dated(LONG_NAME)[1] == "2019-07-02T09:00:00"
    assert dated("IMG_0004.JPG")[1] == "2019-08-03T10:00:00"
    assert dated("IMG_0004(1).JPG")[1] == "2019-09-04T11:00:00"
    assert dated("IMG_0004-edited.JPG")[1] == "2019-08-03T10:00:00"
    # the camera's own date wins; the JSON's position fills the one it lacks
    seventh = rows["IMG_0007.JPG"]["asset"]
    assert dated("IMG_0007.JPG")[:2] == ("exif_original", "2023-07-14T10:15:30.123000")
    assert seventh["gps_latitude"] == pytest.approx(48.8584)
    # not JSON: the file's mtime, as without one
    assert dated("IMG_0008.JPG")[0] == "mtime"
