"""Google Takeout JSON: what of it is believed."""

from __future__ import annotations

import json
from datetime import datetime

from photo_pipeline.media.takeout import read_takeout


def document(**fields: object) -> bytes:
    return json.dumps(fields).encode()


def test_a_known_time_and_position_are_read() -> None:
    facts = read_takeout(
        document(
            photoTakenTime={"timestamp": "1554467696"},
            geoData={"latitude": 0.0, "longitude": 0.0},
            geoDataExif={"latitude": -33.86, "longitude": 151.21, "altitude": 0.0},
        )
    )
    assert facts is not None and facts.taken is not None
    assert (facts.taken.local, facts.taken.offset_minutes) == (datetime(2019, 4, 5, 12, 34, 56), 0)
    assert facts.position == (-33.86, 151.21, None)  # geoData empty: the camera's


def test_unknowns_and_nonsense_are_no_facts() -> None:
    for fields in (
        {"photoTakenTime": {"timestamp": "0"}},
        {"photoTakenTime": {"timestamp": True}},
        {"photoTakenTime": {"timestamp": "NaN"}},
        {"photoTakenTime": "2019-04-05"},
        {"geoData": {"latitude": 91.0, "longitude": 2.0}},
        {"geoData": {"latitude": "north", "longitude": 2.0}},
    ):
        assert not read_takeout(document(**fields)), fields
    assert read_takeout(b"[1, 2]") is None
    assert read_takeout(b"\xff\xfe not json") is None
