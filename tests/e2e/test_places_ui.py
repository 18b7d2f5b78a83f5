"""The Places page in a real Chromium: the offline world map (Leaflet over Natural
Earth's countries, no tile server) with the server's clusters, a click that zooms into
a cluster, the photos of a spot at the deepest zoom opening in the asset view, the
countries → regions list beside it, and a phone-sized page that overflows nothing.
Under the UI's strict CSP: a violation fails the test (conftest.Failures)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(180)
SHOTS = Path("/tmp/s/shots")

PARIS = [(48.8606, 2.3376), (48.8584, 2.2945), (48.8283, 2.4330)]
ROME = (41.8986, 12.4769)  # four photos at one spot: a cluster down to the deepest zoom
TOKYO = [(35.6895, 139.6917), (35.6900, 139.6920)]


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture(scope="module")
def places_server(tmp_path_factory):
    require_chromium()
    root = tmp_path_factory.mktemp("places")
    folder = root / "photos"
    spots = [*PARIS, *[ROME] * 4, *TOKYO]
    for n, (lat, lon) in enumerate(spots):
        photos.jpeg(folder / f"p{n}.jpg", size=(96, 72), seed=n + 1, gps=(lat, lon, 5.0))
    photos.jpeg(folder / "nowhere.jpg", size=(96, 72), seed=50)
    with running_server(
        f"sqlite:///{root / 'library.sqlite3'}", root / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [folder], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def save(page, shots: Path, name: str) -> None:
    page.screenshot(path=str(shots / f"{name}.png"))
    SHOTS.mkdir(parents=True, exist_ok=True)
    shutil.copy(shots / f"{name}.png", SHOTS / f"{name}.png")


def shown_photos(page) -> int:
    """Every photo the map shows: the clusters' counts and the single photos."""
    counts = page.locator(".map-cluster").all_inner_texts()
    return sum(int(text.replace(",", "")) for text in counts) + page.locator(".map-photo").count()


CSP_WATCH = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.violatedDirective} ${event.blockedURI} ${event.sample}`);
});
"""


def test_the_map_shows_clusters_zooms_into_one_and_lists_a_spots_photos(places_server, page, shots):
    # Leaflet positions everything through element.style (the CSSOM), which the UI's
    # style-src 'self' allows; any inline style or script it tried would be refused
    # and reported here.
    page.add_init_script(CSP_WATCH)
    sign_in(page, places_server, "/places")
    expect(page.locator(".places-map path.map-country").first).to_be_attached()
    expect(page.locator(".map-cluster").first).to_be_visible()
    expect(page.locator(".places-status")).to_have_text("9 photos in view")
    assert shown_photos(page) == 9
    save(page, shots, "map-world")

    # Paris's three and Rome's four are one cluster at the world's zoom: a click zooms
    # into it, where they are two; Paris's, a few km apart, come apart on the next.
    expect(page.locator(".map-cluster")).to_have_text(["7", "2"])
    page.locator(".map-cluster", has_text="7").click()
    expect(page.locator(".map-cluster")).to_have_text(["4", "3"])
    expect(page.locator(".places-status")).to_have_text("7 photos in view")
    save(page, shots, "map-europe")
    page.locator(".map-cluster", has_text="3").click()
    expect(page.locator(".map-photo")).to_have_count(3)
    expect(page.locator(".places-status")).to_have_text("3 photos in view")
    save(page, shots, "map-paris")

    # Back out, then Rome's four at one spot: the first click zooms to the deepest
    # zoom, where the cluster stays; the next lists its photos.
    page.get_by_role("button", name="All countries").click()
    page.get_by_role("button", name="Italy, 4 photos").click()
    # The gazetteer names no region or city at this spot in Rome.
    expect(page.get_by_role("list", name="Places")).to_have_text(
        "No region or city is known for these photos."
    )
    rome = page.locator(".map-cluster", has_text="4")
    expect(rome).to_be_visible()
    rome.click()
    expect(page.locator(".leaflet-control-zoom-in")).to_have_class(
        "leaflet-control-zoom-in leaflet-disabled"
    )
    page.locator(".map-cluster", has_text="4").click()
    grid = page.get_by_role("list", name="Photos of this place")
    expect(grid.locator("img")).to_have_count(4)
    expect(page.get_by_role("heading", name="4 photos here")).to_be_visible()
    for image in grid.locator("img").all():
        expect(image).to_have_js_property("complete", True)
        assert image.evaluate("img => img.naturalWidth") > 0
    save(page, shots, "map-spot-photos")
    grid.locator("button").first.click()
    viewer = page.locator("dialog.viewer")
    expect(viewer).to_be_visible()
    expect(viewer.locator(".place")).to_contain_text("Italy")
    expect(viewer.locator("#viewer-title")).not_to_have_text("Unknown date")
    save(page, shots, "map-viewer")
    assert page.evaluate("window.__violations") == []


def test_the_places_beside_the_map_filter_and_zoom(places_server, page, shots):
    sign_in(page, places_server, "/places")
    side = page.get_by_role("list", name="Places")
    expect(side.get_by_role("button")).to_have_text(["Italy4", "France3", "Japan2"])
    side.get_by_role("button", name="Japan, 2 photos").click()
    expect(page.locator(".places-trail")).to_contain_text("All countries›Japan")
    expect(side.get_by_role("button")).to_have_count(1)
    expect(side.get_by_role("button").first).to_contain_text("2")
    # The map flew to Japan: its two photos are all that is in view.
    expect(page.locator(".places-status")).to_have_text("2 photos in view")
    side.get_by_role("button").first.click()  # the region: its cities
    expect(page.locator(".places-trail span").last).not_to_have_text("›")
    expect(side.get_by_role("button").first).to_contain_text("2")
    save(page, shots, "map-places-list")


def test_the_places_page_fits_a_phone(places_server, browser, shots):
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.on(
        "console",
        lambda m: errors.append(m.text) if "Content Security Policy" in m.text else None,
    )
    try:
        sign_in(page, places_server, "/places")
        expect(page.locator(".map-cluster").first).to_be_visible()
        expect(page.get_by_role("list", name="Places").get_by_role("button")).to_have_count(3)
        overflowing = page.evaluate(
            """() => {
              const width = document.documentElement.clientWidth;
              const out = [];
              for (const el of document.querySelectorAll("main *")) {
                if (el.closest(".places-map")) continue;  // clipped by the map's frame
                const box = el.getBoundingClientRect();
                if (box.width && (box.right > width + 0.5 || box.left < -0.5)) {
                  out.push(`${el.tagName}.${el.className} ${box.left}..${box.right}`);
                }
              }
              const frame = document.querySelector(".places-map").getBoundingClientRect();
              if (frame.right > width + 0.5) out.push(`map ${frame.right}`);
              return {out, scroll: document.documentElement.scrollWidth, width};
            }"""
        )
        assert overflowing["out"] == [], overflowing
        assert overflowing["scroll"] <= overflowing["width"], overflowing
        save(page, shots, "map-phone")
        assert errors == []
    finally:
        context.close()
