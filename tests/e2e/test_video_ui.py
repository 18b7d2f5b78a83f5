"""Videos and Live Photos in the web UI: the gallery's video badge (with the clip's
length) and Live badge, the type filter, a <video> player in the asset view, and a
Live Photo's motion part played over its still."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos, videos
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(120)
IDENTIFIER = "4C0B2D6E-8F1A-4B3C-9D5E-6F7A8B9C0D1E"


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def video_server(tmp_path):
    require_chromium()
    root = tmp_path / "roll"
    videos.h264_mp4(root / "clip.mp4", size=(160, 120), seconds=2.0, seed=1)
    videos.live_photo(root, stem="IMG_0700", content_identifier=IDENTIFIER, still="jpeg", seed=2)
    photos.jpeg(root / "IMG_0701.JPG", size=(64, 48), seed=3, taken="2023:07:13 09:00:00")
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def test_video_and_live_badges_and_playback(video_server, page, shots):
    sign_in(page, video_server, "/library")
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(3)  # the Live Photo is one tile
    video_tile = page.locator(".tile[data-kind='video']")
    expect(video_tile.locator(".video-badge")).to_have_text("▶ 0:02")
    expect(page.locator(".tile .live-badge")).to_have_count(1)
    page.screenshot(path=shots / "gallery.png")

    video_tile.locator(".tile-button").click()
    dialog = page.get_by_role("dialog")
    player = dialog.locator("video.player")
    expect(player).to_be_visible()
    src = player.get_attribute("src")
    assert "/original" in src and "access_token=" in src
    expect(dialog).to_contain_text("h264")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    live_tile = page.locator(".tile:has(.live-badge)")
    live_tile.hover()  # the tile plays the motion part over its thumbnail
    expect(live_tile.locator("video.tile-motion")).to_have_count(1)
    assert "/motion" in live_tile.locator("video.tile-motion").get_attribute("src")
    page.mouse.move(0, 0)
    expect(live_tile.locator("video.tile-motion")).to_have_count(0)
    live_tile.locator(".tile-button").click()
    live = dialog.locator(".live-photo")
    expect(live.locator("img.preview")).to_be_visible()
    motion = live.locator("video.motion")
    assert "/motion" in motion.get_attribute("src")
    expect(dialog).to_contain_text("Live Photo")
    live.get_by_role("button", name="▶ Live").click()
    expect(motion).not_to_have_attribute("hidden", "")
    page.screenshot(path=shots / "live.png")
    page.keyboard.press("Escape")

    page.get_by_label("Type").select_option("video")
    expect(tiles).to_have_count(1)
    expect(tiles.first).to_have_attribute("data-kind", "video")
    page.get_by_label("Type").select_option("live")
    expect(tiles).to_have_count(1)
    expect(tiles.first.locator(".live-badge")).to_have_count(1)
