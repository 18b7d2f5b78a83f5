"""The library's search box in a real Chromium (#34.3): typing "paris 2019" shows
exactly the planted photos in the library's grid, a prefix finds as one types, the
search is kept in the address, and a search that matches nothing says so."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.support.api_server import running_server
from tests.support.search_library import PARIS_2019, PLANTED, write_planted

pytestmark = pytest.mark.timeout(120)
SHOT = Path("/tmp/s/shots/search.png")


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def planted_server(tmp_path):
    require_chromium()
    write_planted(tmp_path / "photos")
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [tmp_path / "photos"], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def tile_names(page) -> list[str]:
    return sorted(page.locator(".gallery .tile .tile-name").all_inner_texts())


def test_searching_paris_2019_shows_exactly_the_planted_photos(planted_server, page, shots):
    sign_in(page, planted_server, "/library")
    tiles = page.locator(".gallery .tile")
    # and the video (the timeline draws the days near the viewport: the status counts)
    expect(page.locator(".gallery-status")).to_have_text(f"{len(PLANTED) + 1} photos")
    box = page.get_by_role("searchbox", name="Search photos")
    box.fill("paris 2019")
    expect(tiles).to_have_count(len(PARIS_2019))
    expect(page.locator(".gallery-status")).to_have_text("2 photos")
    ids = {f["path"]: f["asset_id"] for f in planted_server.library.catalog.files()}
    planted = sorted(str(ids[name]) for name in PARIS_2019)
    # Every tile's id in one read of the page, until they are the planted ones: the
    # timeline may redraw its rows between two reads of one tile each (which once read
    # the same id twice). A page that never shows them fails on the wait's timeout.
    page.wait_for_function(
        "want => JSON.stringify([...document.querySelectorAll('.gallery .tile')]"
        ".map(tile => tile.dataset.assetId).sort()) === JSON.stringify(want)",
        arg=planted,
    )
    assert "q=paris+2019" in page.url
    page.screenshot(path=shots / "search.png")
    SHOT.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(shots / "search.png", SHOT)

    box.fill("nik")  # a prefix, as one types
    expect(tiles).to_have_count(1)
    expect(tiles.first).to_have_attribute("data-asset-id", str(ids["DSC_0042.jpg"]))
    box.fill("zanzibar")
    expect(tiles).to_have_count(0)
    expect(page.locator(".gallery-status")).to_contain_text("No photos match")
    box.fill("")
    expect(page.locator(".gallery-status")).to_have_text(f"{len(PLANTED) + 1} photos")
    # the address keeps a search: opened again, it is searched again
    page.goto(planted_server.base_url + "/library?q=tokyo")
    expect(tiles).to_have_count(1)
    expect(page.get_by_role("searchbox", name="Search photos")).to_have_value("tokyo")
