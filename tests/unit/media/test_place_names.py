"""Place names people recognise (#13.9): the city is the place a person would name
there, the nearest GeoNames place is kept as its district; and the shipped gazetteer
is compact (#18.6)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from photo_pipeline.media import place_index
from photo_pipeline.media.places import Place, place_at

# (latitude, longitude) -> (country code, region, city, district)
KNOWN = {
    "Tokyo, Shinjuku (Kabukicho)": (
        (35.6938, 139.7034), ("JP", "Tokyo", "Tokyo", "Kabukicho"),
    ),
    "Tokyo, Shibuya crossing": (
        (35.6595, 139.7005), ("JP", "Tokyo", "Tokyo", "Sakuragaokachō"),
    ),
    "Tokyo, Eifuku (Suginami)": (
        (35.6755, 139.6399), ("JP", "Tokyo", "Tokyo", "Eifuku"),
    ),
    "Berlin, Mitte": (
        (52.5200, 13.4050), ("DE", "State of Berlin", "Berlin", "Mitte"),
    ),
    "Paris, 1er (the Louvre)": (
        (48.8606, 2.3376), ("FR", "Île-de-France", "Paris", None),
    ),
    "Manhattan, Times Square": (
        (40.7580, -73.9855), ("US", "New York", "New York City", "Times Square"),
    ),
    # next to a bigger city of another county or region, a city keeps its name
    "Kawasaki station (Kanagawa), 18 km from Tokyo": (
        (35.5308, 139.6970), ("JP", "Kanagawa", "Kawasaki", None),
    ),
    "Cambridge MA (Middlesex County), 3 km from Boston": (
        (42.3736, -71.1097), ("US", "Massachusetts", "Cambridge", "Mid-Cambridge"),
    ),
    # a village far from any city is its own city
    "Sölden, Ötztal": (
        (46.9655, 11.0076), ("AT", "Tyrol", "Sölden", None),
    ),
    "Lantriac, Haute-Loire": (
        (45.0, 4.0), ("FR", "Auvergne-Rhône-Alpes", "Lantriac", None),
    ),
}  # fmt: skip


@pytest.mark.parametrize("where", list(KNOWN))
def test_the_city_is_the_place_a_person_would_name(where):
    position, (code, region, city, district) = KNOWN[where]
    place = place_at(*position)
    assert place is not None
    assert (place.country_code, place.region, place.city, place.district) == (
        code,
        region,
        city,
        district,
    )


def test_a_point_at_sea_has_no_place():
    assert place_at(36.0, 141.5) is None  # the Pacific off Ibaraki
    assert place_at(54.0, 3.0) is None  # the North Sea


def test_far_from_any_town_there_is_neither_city_nor_district():
    assert place_at(23.0, 12.0) == Place("NE", "Niger", None, None, None)


def test_the_gazetteer_maps_districts_to_their_city_and_cities_to_themselves():
    gazetteer = place_index.load()
    assert len(gazetteer) > 150_000
    by_name: dict[str, list[int]] = {}
    for name in ("Tokyo", "Mitte", "Kabukicho", "Munich", "Kreuzberg"):
        by_name[name] = [
            i for i in range(len(gazetteer)) if gazetteer.name(i) == name
        ]  # a slow scan, fine for five names
    tokyo = next(i for i in by_name["Tokyo"] if gazetteer.country_code(i) == "JP")
    assert gazetteer.city[tokyo] == tokyo
    [kabukicho] = by_name["Kabukicho"]
    assert gazetteer.city[kabukicho] == tokyo
    berlin_districts = [
        i
        for i in by_name["Mitte"] + by_name["Kreuzberg"]
        if gazetteer.region_name(i) == "State of Berlin"
    ]
    assert len(berlin_districts) == 2
    assert {gazetteer.name(int(gazetteer.city[i])) for i in berlin_districts} == {"Berlin"}
    munich = next(i for i in by_name["Munich"] if gazetteer.country_code(i) == "DE")
    assert gazetteer.city[munich] == munich


def test_nearest_works_across_the_antimeridian():
    gazetteer = place_index.load()
    # Fiji straddles 180°: from just east of it, the nearest place is west of it
    [hit] = gazetteer.nearest([(-16.7, -179.95)])
    assert gazetteer.country_code(int(hit)) == "FJ"


MEASURE = """
import resource, sys
def rss_kb():
    with open('/proc/self/status') as status:
        return next(int(l.split()[1]) for l in status if l.startswith('VmHWM:'))
import numpy, tzfpy
from photo_pipeline.media import places
before = rss_kb()
places.place_at(35.6938, 139.7034)
print(before, rss_kb())
"""


def test_the_place_data_loads_in_a_small_peak():
    # Measured in a fresh interpreter: the first lookup loads the gazetteer and tzfpy's
    # polygons. With reverse_geocode (scipy and 155k dicts) it added about 190 MB.
    done = subprocess.run(
        [sys.executable, "-c", MEASURE], capture_output=True, text=True, check=True, timeout=120
    )
    before, after = map(int, done.stdout.split())
    assert (after - before) / 1024 < 80, f"{(after - before) / 1024:.0f} MB added by place data"
