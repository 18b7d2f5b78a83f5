"""Curation in a real Chromium: favourite and rate three photos by keyboard in the
viewer, choose three by click and shift-click and favourite, tag and add them to a
new album at once, then see the album on the Albums page and open it."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(120)
# Where the screenshots are also copied for people to look at (the lead's review).
REVIEW = Path(os.environ.get("PHOTO_PIPELINE_CURATION_SHOTS", "/tmp/s/shots"))


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def five_photos(tmp_path):
    require_chromium()
    root = tmp_path / "roll"
    for n in range(5):
        photos.jpeg(root / f"IMG_{n:04d}.jpg", size=(96, 64), seed=n,
                    taken=f"2024:05:0{n + 1} 10:00:00", offset=None)  # fmt: skip
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def shot(page, shots: Path, name: str) -> None:
    page.screenshot(path=shots / name)
    if REVIEW.parent.exists():
        REVIEW.mkdir(exist_ok=True)
        shutil.copy(shots / name, REVIEW / name)


def curation_of(server, asset_id: int) -> dict:
    with server.client() as http:
        found = http.get(f"/api/assets/{asset_id}").json()
    return {k: found[k] for k in ("rating", "favorite", "rejected", "tags", "albums")}


def test_rate_by_keyboard_then_curate_a_selection_into_an_album(five_photos, page, shots):
    server = five_photos
    sign_in(page, server, "/library?order=oldest")
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(5)
    ids = [int(tiles.nth(i).get_attribute("data-asset-id")) for i in range(5)]

    # The viewer: 4 and f on the first, → then 5 and f, → then 3, x and f.
    tiles.nth(0).locator(".tile-button").click()
    viewer = page.get_by_role("dialog")
    panel = viewer.get_by_role("region", name="Curation")
    expect(panel).to_be_visible()
    for keys in (["4", "f"], ["5", "f"], ["3", "x", "f"]):
        shown = panel.get_attribute("data-asset-id")
        for key in keys:
            page.keyboard.press(key)
        rating = int(keys[0])
        expect(panel.get_by_role("radio", name=f"{rating} star")).to_have_attribute(
            "aria-checked", "true"
        )
        expect(panel.locator(".heart")).to_have_attribute("aria-pressed", "true")
        if keys[-1] != "f" or "x" in keys:
            expect(panel.locator(".reject")).to_have_attribute(
                "aria-pressed", "true" if "x" in keys else "false"
            )
        if rating == 3:
            shot(page, shots, "curation-viewer.png")
        page.keyboard.press("ArrowRight")
        expect(panel).not_to_have_attribute("data-asset-id", shown)
    assert [curation_of(server, i)["rating"] for i in ids[:3]] == [4, 5, 3]
    assert all(curation_of(server, i)["favorite"] for i in ids[:3])
    assert curation_of(server, ids[2])["rejected"] is True
    page.keyboard.press("0")  # the fourth: unrated stays unrated
    page.keyboard.press("Escape")
    # The grid shows what the viewer did, without a reload.
    expect(page.locator(".gallery .tile-heart[aria-pressed='true']")).to_have_count(3)
    expect(tiles.nth(1).locator(".tile-stars")).to_have_text("★★★★★")
    expect(tiles.nth(2)).to_have_class(re.compile(r"\brejected\b"))

    # Select the last three: a click, then a shift-click.
    page.get_by_role("button", name="Select", exact=True).click()
    tiles.nth(2).locator(".tile-button").click()
    tiles.nth(4).locator(".tile-button").click(modifiers=["Shift"])
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text("3 photos selected")
    actions = page.locator(".selection-curation")
    actions.get_by_role("button", name="♥ Favourite").click()
    expect(actions.locator(".curation-said")).to_have_text("Favourite: 2 photos changed")
    actions.get_by_label("Rate the selection").select_option("2")
    expect(actions.locator(".curation-said")).to_have_text("Rate: 3 photos changed")
    actions.get_by_label("Tag the selection").fill("Places|France|Paris")
    actions.get_by_label("Tag the selection").press("Enter")
    expect(actions.locator(".curation-said")).to_have_text("Tag: 3 photos changed")
    page.once("dialog", lambda dialog: dialog.accept("Trip to Paris"))
    actions.get_by_label("Add to album").select_option("new")
    expect(actions.locator(".curation-said")).to_have_text("Add to album: 3 photos changed")
    expect(page.locator(".gallery .tile-heart[aria-pressed='true']")).to_have_count(5)
    shot(page, shots, "curation-selection.png")
    for asset_id in ids[2:]:
        curated = curation_of(server, asset_id)
        assert curated["favorite"] and curated["rating"] == 2
        assert curated["tags"] == ["Places|France|Paris"]
        assert [a["name"] for a in curated["albums"]] == ["Trip to Paris"]

    # The library's filters: a parent tag finds the photos.
    page.goto(server.base_url + "/library?tag=Places&rating=%3E%3D2")
    expect(tiles).to_have_count(3)

    # The Albums page: the album with its cover and count; opening it shows its photos.
    page.get_by_role("link", name="Albums").click()
    card = page.locator(".album-card").filter(has_text="Trip to Paris")
    expect(card).to_contain_text("3 photos")
    expect(card).to_contain_text("2024-05-03 – 2024-05-05")
    expect(card.locator("img.album-cover")).to_have_js_property("complete", True)
    assert card.locator("img.album-cover").evaluate("img => img.naturalWidth") > 0
    shot(page, shots, "curation-albums.png")
    card.get_by_role("link").click()
    expect(page.get_by_role("heading", name="Trip to Paris")).to_be_visible()
    album_photos = page.locator(".album-photos .album-photo")
    expect(album_photos).to_have_count(3)
    assert [int(album_photos.nth(i).get_attribute("data-asset-id")) for i in range(3)] == ids[2:]
    expect(album_photos.nth(0)).to_contain_text("Cover")
    shot(page, shots, "curation-album.png")


def test_a_drag_in_select_mode_chooses_every_photo_it_crosses(five_photos, page, shots):
    server = five_photos
    sign_in(page, server, "/library?order=oldest")
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(5)
    ids = [int(tiles.nth(i).get_attribute("data-asset-id")) for i in range(5)]
    page.get_by_role("button", name="Select", exact=True).click()
    # A day each, one under another: the drag runs down four of them, all on screen.
    page.set_viewport_size({"width": 1360, "height": 1800})
    start, end = tiles.nth(0).bounding_box(), tiles.nth(3).bounding_box()
    page.mouse.move(start["x"] + 40, start["y"] + 40)
    page.mouse.down()
    for step in range(1, 21):  # across tiles 1 and 2 to 3 (a day each, one under another)
        x = start["x"] + 40 + (end["x"] - start["x"]) * step / 20
        y = start["y"] + 40 + (end["y"] - start["y"]) * step / 20
        page.mouse.move(x, y)
    page.mouse.up()
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text("4 photos selected")
    page.locator(".selection-curation").get_by_role("button", name="♥ Favourite").click()
    expect(page.locator(".gallery .tile-heart[aria-pressed='true']")).to_have_count(4)
    shot(page, shots, "curation-drag.png")
    assert [curation_of(server, i)["favorite"] for i in ids] == [True] * 4 + [False]
