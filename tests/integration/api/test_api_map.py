"""The map API over a real server and real geotagged JPEGs: clusters that add up to
every photo with a position at every zoom, a view's bbox (across the antimeridian
too), the deepest zoom's pages of photos, the places beside the map, and 422s for a
bad view."""

from __future__ import annotations

import pytest

from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.factories.photos import jpeg
from tests.support.api_server import running_server

# (name, lat, lon): three in Paris a few km apart, two in Tokyo, two in Fiji on either
# side of the antimeridian, one in New York; and one photo with no position.
PLANTED = [
    ("paris-louvre", 48.8606, 2.3376),
    ("paris-eiffel", 48.8584, 2.2945),
    ("paris-vincennes", 48.8283, 2.4330),
    ("tokyo-1", 35.6895, 139.6917),
    ("tokyo-2", 35.6900, 139.6920),
    ("fiji-west", -17.7765, 177.4356),
    ("fiji-taveuni", -16.8000, -179.9800),
    ("new-york", 40.7128, -74.0060),
]
WORLD = "-180,-90,180,90"


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    folder = tmp_path_factory.mktemp("map-photos")
    for seed, (name, lat, lon) in enumerate(PLANTED):
        jpeg(folder / f"{name}.jpg", gps=(lat, lon, 10.0), seed=seed + 1, size=(320, 240))
    jpeg(folder / "nowhere.jpg", seed=99, size=(320, 240))
    return folder


@pytest.fixture
def api(db_url, tmp_path, photos):
    with running_server(db_url, tmp_path / "home") as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [photos], follow_up=lib.settings)
        worker = Worker(lib.service, lib.workers, registry, WorkerConfig(burst=True))
        assert worker.run() == 0
        with server.client() as http:
            yield http


def view(http, bbox=WORLD, zoom=0, **params) -> dict:
    answer = http.get("/api/map", params={"bbox": bbox, "zoom": zoom, **params})
    assert answer.status_code == 200, answer.text
    return answer.json()


def total(found: dict) -> int:
    return sum(c["count"] for c in found["clusters"]) + len(found["assets"])


def names_by_id(http) -> dict[int, str]:
    found = http.get("/api/assets", params={"limit": 100}).json()["assets"]
    return {a["id"]: a["name"].removesuffix(".jpg") for a in found}


def test_clusters_add_up_to_every_photo_with_a_position_at_every_zoom(api):
    for zoom in range(18):
        found = view(api, zoom=zoom)
        assert total(found) == len(PLANTED), (zoom, found)
    world = view(api, zoom=0)
    # At zoom 0 (4 × 4 cells) Paris and New York and Tokyo are apart, Fiji's two are
    # a cell each side of 180°.
    assert sorted(c["count"] for c in world["clusters"]) == [2, 3]
    paris = next(c for c in world["clusters"] if c["count"] == 3)
    assert paris["lat"] == pytest.approx(sum(p[1] for p in PLANTED[:3]) / 3)
    west, south, east, north = paris["bbox"]
    assert (south, north) == (pytest.approx(48.8283), pytest.approx(48.8606))
    assert (west, east) == (pytest.approx(2.2945), pytest.approx(2.4330))
    assert paris["thumbnail_url"].startswith(f"/api/assets/{paris['asset_id']}/thumbnail?v=")
    assert api.get(paris["thumbnail_url"]).headers["content-type"] == "image/jpeg"
    # Deep in Paris the three are apart: three assets, no cluster.
    deep = view(api, "2.2,48.8,2.5,48.9", zoom=14)
    assert deep["clusters"] == [] and len(deep["assets"]) == 3
    names = names_by_id(api)
    assert {names[a["id"]] for a in deep["assets"]} == {name for name, _, _ in PLANTED[:3]}
    # Tokyo's two lie 60 m apart: one cluster down to zoom 15, apart at 17.
    tokyo = "139.6,35.6,139.8,35.8"
    assert [c["count"] for c in view(api, tokyo, zoom=12)["clusters"]] == [2]
    assert len(view(api, tokyo, zoom=17)["assets"]) == 2


def test_a_view_holds_only_the_cells_it_touches(api):
    europe = view(api, "-10,35,30,60", zoom=5)
    assert total(europe) == 3
    nothing = view(api, "-40,-40,-30,-30", zoom=6)
    assert nothing == {"zoom": 6, "clusters": [], "assets": [], "next_cursor": None}
    names = names_by_id(api)
    # The United States at zoom 4: New York alone, as an asset.
    usa = view(api, "-125,25,-66,50", zoom=4)
    assert usa["clusters"] == [] and [names[a["id"]] for a in usa["assets"]] == ["new-york"]


def test_a_view_across_the_antimeridian_holds_both_sides(api):
    names = names_by_id(api)
    across = view(api, "170,-25,-170,-10", zoom=6)
    assert total(across) == 2
    at_deepest = view(api, "170,-25,-170,-10", zoom=18)
    assert {names[a["id"]] for a in at_deepest["assets"]} == {"fiji-west", "fiji-taveuni"}
    east_only = view(api, "170,-25,180,-10", zoom=18)
    assert [names[a["id"]] for a in east_only["assets"]] == ["fiji-west"]
    # Nothing of the rest of the world: the box is 20° wide, not 340°.
    assert total(view(api, "170,-90,-170,90", zoom=3)) == 2


def test_the_deepest_zoom_pages_through_the_views_photos(api):
    seen, cursor = [], None
    while True:
        page = view(api, zoom=18, limit=3, **({"cursor": cursor} if cursor else {}))
        assert page["clusters"] == [] and len(page["assets"]) <= 3
        seen += page["assets"]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert len(seen) == len({a["id"] for a in seen}) == len(PLANTED)
    assert all(a["thumbnail_url"] for a in seen)
    names = names_by_id(api)
    by_name = {names[a["id"]]: a for a in seen}
    for name, lat, lon in PLANTED:
        assert (by_name[name]["lat"], by_name[name]["lon"]) == (
            pytest.approx(lat, abs=1e-4),
            pytest.approx(lon, abs=1e-4),
        )


def test_the_places_beside_the_map(api):
    countries = api.get("/api/places").json()["places"]
    counts = {p["country_code"]: p["count"] for p in countries}
    assert counts == {"FR": 3, "JP": 2, "FJ": 2, "US": 1}
    assert countries[0]["name"] == "France"
    regions = api.get("/api/places", params={"country": "fr"}).json()["places"]
    assert sum(r["count"] for r in regions) == 3
    assert {r["level"] for r in regions} == {"region"}
    region = regions[0]["name"]
    cities = api.get("/api/places", params={"country": "FR", "region": region}).json()
    assert sum(c["count"] for c in cities["places"]) == regions[0]["count"]
    west, south, east, north = countries[0]["bbox"]
    assert (south, north) == (pytest.approx(48.8283), pytest.approx(48.8606))
    assert (west, east) == (pytest.approx(2.2945), pytest.approx(2.4330))


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"bbox": "a,b,c,d", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "1,2,3", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "1,2,3,4,5", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "0,50,10,40", "zoom": 3}, "invalid_bbox"),  # south above north
        ({"bbox": "-200,0,10,10", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "0,-95,10,10", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "nan,0,10,10", "zoom": 3}, "invalid_bbox"),
        ({"bbox": "inf,0,10,10", "zoom": 3}, "invalid_bbox"),
        ({"bbox": WORLD, "zoom": 19}, "invalid_request"),
        ({"bbox": WORLD, "zoom": -1}, "invalid_request"),
        ({"bbox": WORLD, "zoom": "x"}, "invalid_request"),
        ({"bbox": WORLD}, "invalid_request"),
        ({"zoom": 3}, "invalid_request"),
        ({"bbox": WORLD, "zoom": 18, "cursor": "1.x"}, "invalid_request"),
        ({"bbox": WORLD, "zoom": 18, "cursor": "99999999999999999999999.1"}, "invalid_cursor"),
        ({"bbox": WORLD, "zoom": 18, "limit": 0}, "invalid_request"),
    ],
)
def test_a_bad_view_is_a_422_problem(api, params, code):
    answer = api.get("/api/map", params=params)
    assert answer.status_code == 422, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == code


def test_a_region_without_its_country_is_a_422_problem(api):
    answer = api.get("/api/places", params={"region": "Île-de-France"})
    assert answer.status_code == 422 and answer.json()["code"] == "invalid_request"
