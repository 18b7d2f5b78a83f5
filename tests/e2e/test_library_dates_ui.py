"""The library page in a real Chromium: undated photos carry a badge, tiles name the
place with its district and the camera as people name it, a Live Photo's view names
its MOV, and "Set date" on a selection dates photos (trusted) and undoes it."""

from __future__ import annotations

import os
import re
from datetime import UTC, datetime

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos, videos
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(120)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def roll_server(tmp_path):
    require_chromium()
    root = tmp_path / "roll"
    videos.live_photo(root, stem="IMG_0400")
    photos.jpeg(root / "berlin.jpg", size=(64, 48), seed=1, taken="2024:05:01 08:00:00",
                offset=None, gps=(52.5200, 13.4050, 10.0), make="Canon",
                model="Canon DIGITAL IXUS 400")  # fmt: skip
    # 10:00 in Tokyo (01:00 UTC) came before 08:00 in Berlin (06:00 UTC) that day
    photos.jpeg(root / "tokyo.jpg", size=(64, 48), seed=2, taken="2024:05:01 10:00:00",
                offset=None, gps=(35.6938, 139.7034, 10.0))  # fmt: skip
    moment = datetime(2026, 12, 1, 19, 21, 14, tzinfo=UTC).timestamp()
    for n in range(2):  # copies made "today": only their mtime dates them
        copied = photos.jpeg(root / f"IMG_030{n}.jpg", size=(64, 48), seed=3 + n,
                             taken=None, offset=None)  # fmt: skip
        os.utime(copied, (moment + n, moment + n))
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def ids_by_name(server) -> dict[str, int]:
    return {f["path"]: f["asset_id"] for f in server.library.catalog.files()}


def test_tiles_flag_undated_photos(roll_server, page, shots):
    ids = ids_by_name(roll_server)
    sign_in(page, roll_server, "/library")
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(5)
    undated = page.locator(".gallery .tile .undated-badge")
    expect(undated).to_have_count(2)
    for n in range(2):
        tile = page.locator(f".gallery .tile[data-asset-id='{ids[f'IMG_030{n}.jpg']}']")
        expect(tile.locator(".undated-badge")).to_be_visible()
        expect(tile.locator(".undated-badge")).to_have_text("Undated")
    page.screenshot(path=shots / "library-undated.png")


def test_tiles_name_the_district_and_the_camera_as_people_name_it(roll_server, page):
    ids = ids_by_name(roll_server)
    sign_in(page, roll_server, "/library")
    berlin = page.locator(f".gallery .tile[data-asset-id='{ids['berlin.jpg']}']")
    expect(berlin.locator(".tile-place")).to_have_text("Mitte, Berlin, Germany")
    expect(berlin.locator(".tile-camera")).to_have_text("Canon DIGITAL IXUS 400")
    expect(berlin.locator(".undated-badge")).to_have_count(0)


def test_the_timeline_follows_the_local_time_shown_either_way(roll_server, page):
    ids = ids_by_name(roll_server)
    sign_in(page, roll_server, "/library")
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(5)

    def order() -> list[int]:
        return [int(t.get_attribute("data-asset-id")) for t in tiles.all()]

    # By the clocks shown, newest first: Tokyo's 10:00 before Berlin's 08:00 (though
    # Berlin's came later as an instant); oldest first, the other way round.
    assert order().index(ids["tokyo.jpg"]) < order().index(ids["berlin.jpg"])
    page.get_by_label("Order").select_option("oldest")
    expect(page).to_have_url(re.compile(r"order=oldest"))
    berlin_first = f".gallery .tile:nth-child(2)[data-asset-id='{ids['berlin.jpg']}']"
    expect(page.locator(berlin_first)).to_have_count(1)
    assert order().index(ids["berlin.jpg"]) < order().index(ids["tokyo.jpg"])


def test_a_live_photos_view_names_its_motion_file(roll_server, page, shots):
    ids = ids_by_name(roll_server)
    sign_in(page, roll_server, "/library")
    page.locator(f".gallery .tile[data-asset-id='{ids['IMG_0400.HEIC']}'] .tile-button").click()
    motion = page.get_by_role("dialog").get_by_role("region", name="Motion part")
    expect(motion).to_contain_text("IMG_0400.MOV")
    expect(motion).to_contain_text(re.compile(r"0:0[12] long"))
    expect(motion).to_contain_text(re.compile(r"\d+(\.\d)? KB"))
    page.screenshot(path=shots / "live-photo-motion-part.png")


def test_set_date_on_a_selection_then_undo(roll_server, page, shots):
    ids = ids_by_name(roll_server)
    copies = [ids["IMG_0300.jpg"], ids["IMG_0301.jpg"]]
    sign_in(page, roll_server, "/library")
    expect(page.locator(".gallery .tile .undated-badge")).to_have_count(2)
    expect(page.get_by_role("button", name="Set date…")).to_be_hidden()  # until selecting
    page.get_by_role("button", name="Select", exact=True).click()
    for asset_id in copies:
        page.locator(f".gallery .tile[data-asset-id='{asset_id}'] .tile-button").click()
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text("2 photos selected")
    for asset_id in copies:
        expect(page.locator(f".gallery .tile[data-asset-id='{asset_id}']")).to_have_class(
            re.compile(r"\bchosen\b")
        )
    page.get_by_role("button", name="Set date…").click()
    dialog = page.get_by_role("dialog", name="Set the date of 2 photos")
    dialog.get_by_label("Date and time").fill("2019-06-14T10:00")
    page.screenshot(path=shots / "set-date-dialog.png")
    dialog.get_by_role("button", name="Set date").click()

    outcome = page.locator(".date-outcome")
    expect(outcome).to_contain_text("Date 2019-06-14 10:00 set on 2 photos")
    expect(page.locator(".gallery .tile .undated-badge")).to_have_count(0)
    expect(page.get_by_role("button", name="Set date…")).to_be_hidden()  # selecting ended
    for asset_id in copies:
        tile = page.locator(f".gallery .tile[data-asset-id='{asset_id}']")
        expect(tile.locator(".tile-date")).to_have_text("2019-06-14 10:00:00")
    with roll_server.client() as http:
        detail = http.get(f"/api/assets/{copies[0]}").json()
    assert (detail["taken_source"], detail["taken_confidence"]) == ("user", "user")
    page.screenshot(path=shots / "set-date-done.png")

    outcome.get_by_role("button", name="Undo").click()
    expect(outcome).to_contain_text("Dates given back to 2 photos")
    expect(page.locator(".gallery .tile .undated-badge")).to_have_count(2)
    with roll_server.client() as http:
        detail = http.get(f"/api/assets/{copies[0]}").json()
    assert detail["taken_confidence"] == "file_time"
    page.screenshot(path=shots / "set-date-undone.png")
