"""Place names people recognise in the catalogue and the API (#13.9): an import stores
the city a person would name and the district apart (both databases); the listing
and the asset detail show both, and the place filter finds a photo by either."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.ingest.places import start_backfill
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.photo_jobs import run_library_jobs

# file name -> (latitude, longitude), (country code, region, city, district)
TRIP = {
    "shinjuku.jpg": ((35.6938, 139.7034), ("JP", "Tokyo", "Tokyo", "Kabukicho")),
    "shibuya.jpg": ((35.6595, 139.7005), ("JP", "Tokyo", "Tokyo", "Sakuragaokachō")),
    "mitte.jpg": ((52.5200, 13.4050), ("DE", "State of Berlin", "Berlin", "Mitte")),
    "louvre.jpg": ((48.8606, 2.3376), ("FR", "Île-de-France", "Paris", None)),
    "times-square.jpg": (
        (40.7580, -73.9855), ("US", "New York", "New York City", "Times Square"),
    ),
    "soelden.jpg": ((46.9655, 11.0076), ("AT", "Tyrol", "Sölden", None)),
    "north-sea.jpg": ((54.0, 3.0), (None, None, None, None)),
}  # fmt: skip
PLACE = ("country_code", "region", "city", "district")


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def import_trip(api, root) -> dict[str, int]:
    """Import the trip; returns asset id by file name."""
    for n, (name, ((lat, lon), _)) in enumerate(TRIP.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, taken=f"2024:05:0{n + 1} 12:00:00",
                    offset=None, subsec=None, gps=(lat, lon, 10.0))  # fmt: skip
    lib = api.library
    import_folders(lib.service, lib.catalog, [root])
    run_library_jobs(lib)
    return {f["path"]: f["asset_id"] for f in lib.catalog.files()}


def places_of(lib) -> dict[int, tuple]:
    return {a["id"]: tuple(a[key] for key in PLACE) for a in lib.catalog.assets()}


def test_import_stores_city_and_district_and_the_api_shows_both(api, tmp_path):
    ids = import_trip(api, tmp_path / "trip")
    stored = places_of(api.library)
    assert {name: stored[ids[name]] for name in TRIP} == {
        name: want for name, (_, want) in TRIP.items()
    }
    with api.client() as http:
        listed = http.get("/api/assets", params={"limit": 50})
        assert listed.status_code == 200, listed.text
        summary = {a["id"]: (a["city"], a["district"]) for a in listed.json()["assets"]}
        for name, (_, (_, _, city, district)) in TRIP.items():
            assert summary[ids[name]] == (city, district), name
        detail = http.get(f"/api/assets/{ids['mitte.jpg']}").json()
        assert (detail["city"], detail["district"], detail["region"]) == (
            "Berlin", "Mitte", "State of Berlin",
        )  # fmt: skip

        def found(place: str) -> set[int]:
            page = http.get("/api/assets", params={"place": place, "limit": 50})
            assert page.status_code == 200, page.text
            return {a["id"] for a in page.json()["assets"]}

        assert found("tokyo") == {ids["shinjuku.jpg"], ids["shibuya.jpg"]}
        assert found("Mitte") == {ids["mitte.jpg"]}  # by its district
    by_district = api.library.catalog.assets(place="kabukicho")
    assert [a["id"] for a in by_district] == [ids["shinjuku.jpg"]]


def test_backfill_stores_the_district_too(api, tmp_path):
    ids = import_trip(api, tmp_path / "trip")
    lib = api.library
    with lib.sessions.begin() as session:  # as rows catalogued before places existed
        session.execute(
            update(assets).values(
                tz_name=None, tz_source=None, country_code=None, country=None, region=None,
                city=None, district=None,
            )
        )  # fmt: skip
    start_backfill(lib.service)
    run_library_jobs(lib)
    stored = places_of(lib)
    assert {name: stored[ids[name]] for name in TRIP} == {
        name: want for name, (_, want) in TRIP.items()
    }


def test_refresh_renames_the_places_of_a_library_catalogued_before(api, tmp_path):
    ids = import_trip(api, tmp_path / "trip")
    lib = api.library
    before = {a["id"]: a for a in lib.catalog.assets()}
    with lib.sessions.begin() as session:  # as the old gazetteer named them: the nearest place
        for name in ("shinjuku.jpg", "mitte.jpg", "times-square.jpg"):
            district = TRIP[name][1][3]
            session.execute(
                update(assets).where(assets.c.id == ids[name]).values(city=district, district=None)
            )
    assert start_backfill(lib.service).job["params"] == {}
    run_library_jobs(lib)  # a plain backfill leaves resolved assets alone
    assert places_of(lib)[ids["mitte.jpg"]] == ("DE", "State of Berlin", "Mitte", None)
    job = start_backfill(lib.service, refresh=True).job
    run_library_jobs(lib)
    assert lib.service.progress(job["id"])["total"] == len(TRIP)  # every asset with GPS
    after = {a["id"]: a for a in lib.catalog.assets()}
    stored = {name: tuple(after[ids[name]][key] for key in PLACE) for name in TRIP}
    assert stored == {name: want for name, (_, want) in TRIP.items()}
    for asset_id, row in after.items():  # times untouched
        for key in ("taken_local", "taken_utc", "tz_name", "tz_source"):
            assert row[key] == before[asset_id][key]
