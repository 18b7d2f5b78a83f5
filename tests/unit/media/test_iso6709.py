"""media.iso6709: the strict parser of video GPS positions."""

from __future__ import annotations

import pytest

from photo_pipeline.media.iso6709 import Position, parse_iso6709


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # Apple: degrees, altitude, terminator
        ("+52.5163+013.3777+034.000/", Position(52.5163, 13.3777, 34.0)),
        # Android / FFmpeg "location": no altitude
        ("+35.6895+139.6917/", Position(35.6895, 139.6917, None)),
        ("-33.8688+151.2093/", Position(-33.8688, 151.2093, None)),
        ("+40.7128-074.0060-012.5/", Position(40.7128, -74.006, -12.5)),
        # integer degrees, and no terminator
        ("+52+013/", Position(52.0, 13.0, None)),
        ("+52.5163+013.3777", Position(52.5163, 13.3777, None)),
        # degrees + minutes, degrees + minutes + seconds
        ("+5230.5-00030.0/", Position(52 + 30.5 / 60, -0.5, None)),
        ("+523045.0+0132600+100/", Position(52 + 30 / 60 + 45 / 3600, 13 + 26 / 60, 100.0)),
        # a coordinate reference system name before the terminator
        ("+52.5163+013.3777+034.000CRSWGS_84/", Position(52.5163, 13.3777, 34.0)),
        # the poles and the antimeridian are positions too
        ("+90.0000+180.0000/", Position(90.0, 180.0, None)),
    ],
)
def test_parses(text, expected) -> None:
    parsed = parse_iso6709(text)
    assert parsed is not None
    assert parsed.latitude == pytest.approx(expected.latitude)
    assert parsed.longitude == pytest.approx(expected.longitude)
    if expected.altitude is None:
        assert parsed.altitude is None
    else:
        assert parsed.altitude == pytest.approx(expected.altitude)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "/",
        "52.5163+013.3777/",  # the latitude's sign is required
        "+52.5163/",  # no longitude
        "+52.5163 +013.3777/",  # space inside
        "+91.0000+013.3777/",  # beyond the pole
        "+52.0000+181.0000/",  # beyond the antimeridian
        "+5260.0+01300.0/",  # minute 60
        "+523060+0130000/",  # second 60
        "+525.5+013.5/",  # three integer digits of latitude: neither D, DM nor DMS
        "+52.5+13.5/",  # two integer digits of longitude
        "+52.5163+013.3777+034.000/junk",
        "+52.5163+013.3777+034.000+1/",  # a fourth number
        "+52.5.1+013.3777/",
        "N52.5163 E13.3777",
        "+52,5163+013,3777/",  # decimal comma
    ],
)
def test_rejects_malformed(text) -> None:
    assert parse_iso6709(text) is None


@pytest.mark.parametrize("value", [None, 52.5, b"+52.5163+013.3777/", ["+52+013/"]])
def test_rejects_non_text(value) -> None:
    assert parse_iso6709(value) is None
