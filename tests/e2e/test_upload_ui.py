"""The library page's upload flow in Chromium at a phone's width (390 px, touch):
two photos chosen, their progress shown, both catalogued and shown in the library;
chosen again, both are recognised by the SHA-256 pre-check and not sent."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from photo_pipeline.pipeline.uploads.settings import UploadSettings
from tests.e2e.conftest import Failures, require_chromium, sign_in
from tests.factories.photos import jpeg
from tests.support.api_server import ApiServer, running_server

PHONE = {"width": 390, "height": 844}


@pytest.fixture
def upload_server(tmp_path: Path) -> Iterator[ApiServer]:
    require_chromium()
    allowed = tmp_path / "photos"
    allowed.mkdir()
    settings = UploadSettings(root=allowed / "uploads", sweep_seconds=0.2, reserve_bytes=0)
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}",
        tmp_path / "home",
        embedded_workers=2,
        upload_settings=settings,
        allowed_roots=(allowed.resolve(),),
    ) as server:
        yield server


@pytest.fixture
def phone_page(browser):
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(60_000)
    page = context.new_page()
    failures = Failures()
    page.on("console", failures.console)
    page.on("pageerror", failures.page_error)
    yield page
    context.close()
    assert not failures.seen, failures.seen


# Every percent each file's bar showed, in order.
WATCH_PROGRESS = """() => {
  window.seenPercents = {};
  new MutationObserver((changes) => {
    for (const change of changes) {
      const bar = change.target;
      if (!(bar instanceof HTMLProgressElement)) continue;
      const name = bar.closest("[data-name]")?.dataset.name;
      (window.seenPercents[name] ||= []).push(Number(bar.dataset.percent));
    }
  }).observe(document.body, { subtree: true, attributes: true, attributeFilter: ["data-percent"] });
}"""


def test_two_photos_uploaded_from_a_phone_appear_in_the_library(
    upload_server: ApiServer, phone_page, tmp_path: Path, shots: Path
) -> None:
    from playwright.sync_api import expect

    roll = tmp_path / "camera-roll"
    roll.mkdir()
    photos = [
        jpeg(roll / "IMG_0001.JPG", size=(1600, 1200), seed=11, taken="2024:06:01 08:00:00"),
        jpeg(roll / "IMG_0002.JPG", size=(1600, 1200), seed=12, taken="2024:06:01 08:05:00"),
    ]
    page = phone_page
    sign_in(page, upload_server, "/library")
    expect(page.get_by_text("The library is empty")).to_be_visible()
    page.get_by_label("Device").fill("Anna's phone")
    page.get_by_label("Device").dispatch_event("change")
    page.evaluate(WATCH_PROGRESS)
    page.screenshot(path=shots / "1-empty.png", full_page=True)

    page.get_by_label("Photos and videos to upload").set_input_files([str(p) for p in photos])
    items = page.locator(".upload-item")
    expect(items).to_have_count(2)
    for photo in photos:
        row = page.locator(f'.upload-item[data-name="{photo.name}"]')
        expect(row).to_have_attribute("data-state", "catalogued")
        expect(row.get_by_role("progressbar")).to_have_attribute("data-percent", "100")
    expect(page.locator(".upload-summary")).to_have_text("2 of 2 files done")
    expect(page.locator(".gallery .tile")).to_have_count(2)
    expect(page.locator(".gallery .tile img.thumb")).to_have_count(2)
    page.screenshot(path=shots / "2-uploaded.png", full_page=True)

    seen = page.evaluate("window.seenPercents")
    for photo in photos:  # each bar moved up to 100, never back
        percents = seen[photo.name]
        assert percents[-1] == 100 and percents == sorted(percents), percents
    # Nothing wider than the phone's screen.
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]

    root = upload_server.app.state.uploads.settings.root
    landed = sorted(p.name for p in (root / "Anna's phone").iterdir())
    assert landed == ["IMG_0001.JPG", "IMG_0002.JPG"]
    for photo in photos:
        assert (root / "Anna's phone" / photo.name).stat().st_mtime_ns // 1_000_000 == (
            photo.stat().st_mtime_ns // 1_000_000
        )  # lastModified is in milliseconds

    # The same roll again: the pre-check finds both, nothing is sent.
    page.get_by_label("Photos and videos to upload").set_input_files([str(p) for p in photos])
    expect(page.locator('.upload-item[data-state="known"]')).to_have_count(2)
    assert sorted(p.name for p in (root / "Anna's phone").iterdir()) == landed
    digests = {hashlib.sha256(p.read_bytes()).hexdigest() for p in photos}
    assert len(digests) == 2
    page.screenshot(path=shots / "3-known.png", full_page=True)


def test_an_upload_cut_off_when_its_tab_closed_resumes_in_a_new_tab(
    upload_server: ApiServer, browser, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    chunk = 16 << 20  # js/upload.js sends 16 MiB a PATCH
    video = tmp_path / "VID_0001.MOV"
    data = os.urandom(chunk + (3 << 20))
    video.write_bytes(data)
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(60_000)
    seen: list[tuple[str, str | None]] = []
    context.on("request", lambda r: seen.append((r.method, r.headers.get("upload-offset"))))

    first = context.new_page()

    def network_drops_after_the_first_chunk(route) -> None:
        # The first chunk goes with the POST that creates the upload; then the network
        # is gone for every PATCH.
        if route.request.method == "PATCH":
            route.abort("internetdisconnected")
        else:
            route.continue_()

    first.route("**/api/uploads**", network_drops_after_the_first_chunk)
    sign_in(first, upload_server, "/library")
    first.get_by_label("Photos and videos to upload").set_input_files(str(video))
    expect(first.locator(".upload-item")).to_have_attribute("data-state", "retrying")
    root = upload_server.app.state.uploads.settings.root
    partials = list((root / ".pp-uploads").iterdir())
    assert [p.stat().st_size for p in partials] == [chunk]  # the first chunk is held
    first.close()  # the tab is closed mid-upload

    seen.clear()
    second = context.new_page()
    sign_in(second, upload_server, "/library")
    second.get_by_label("Photos and videos to upload").set_input_files(str(video))
    row = second.locator(".upload-item")
    expect(row).to_have_attribute("data-state", re.compile("done|catalogued"))
    context.close()
    landed = [p for p in root.glob(f"*/{video.name}")]  # the device's folder, as guessed
    assert len(landed) == 1 and landed[0].read_bytes() == data
    # The new tab created no upload and sent only what the server did not hold.
    assert [offset for method, offset in seen if method == "PATCH"] == [str(chunk)]
    assert ("POST", None) not in seen
