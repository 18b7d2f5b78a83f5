"""The library's timeline in real Chromium: justified rows under day headings, newest
first; scrolling a large timeline keeps only the rows near the viewport and reads only
the months it reaches; the scrubber jumps to a month; the viewer steps by keyboard,
downloads the original; and at a phone's 390 px, rows of three or four photos and a
full-screen viewer that a swipe steps through."""

from __future__ import annotations

import calendar
import json
from datetime import date
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.e2e.conftest import require_chromium, sign_in
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(180)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def empty_server(tmp_path):
    require_chromium()
    with running_server(f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home") as server:
        yield server


# A fake library of five years, three days a month of 20 photos each (3,600 photos),
# served by routes: the timeline's counts and /api/assets by date range and cursor.
YEARS = range(2019, 2024)
PER_DAY = 20


def fake_days() -> list[str]:
    days = []
    for year in YEARS:
        for month in range(1, 13):
            last = calendar.monthrange(year, month)[1]
            days += [date(year, month, d).isoformat() for d in (2, 15, last)]
    return sorted(days, reverse=True)


def fake_assets(portraits: bool = True) -> list[dict]:
    found = []
    for day in fake_days():
        for n in range(PER_DAY):
            found.append(
                {
                    "id": len(found) + 1,
                    "taken_local": f"{day}T{23 - n:02d}:00:00",
                    "width": 3000 if portraits and n % 3 == 0 else 4000,
                    "height": 4000 if portraits and n % 3 == 0 else 3000,
                    "thumbnail_url": None,
                    "original_url": f"/api/assets/{len(found) + 1}/original",
                }
            )
    return found  # newest first


def route_fake_library(page, portraits: bool = True) -> list[dict]:
    """Serve the fake library; returns the /api/assets queries seen."""
    every = fake_assets(portraits)
    seen: list[dict] = []

    def timeline(route):
        days = [{"day": d, "count": PER_DAY} for d in fake_days()]
        body = {"days": days, "total": len(every), "from_summary": True}
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    def listing(route):
        query = {k: v[0] for k, v in parse_qs(urlparse(route.request.url).query).items()}
        seen.append(query)
        assert query["sort"] == "taken-desc"
        matching = [
            a for a in every if query["taken_from"] <= a["taken_local"][:10] <= query["taken_to"]
        ]
        start, limit = int(query.get("cursor", "0")), int(query["limit"])
        end = min(len(matching), start + limit)
        body = {
            "assets": matching[start:end],
            "next_cursor": str(end) if end < len(matching) else None,
        }
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/api/timeline?*", timeline)
    page.route("**/api/assets?*", listing)
    return seen


def top_heading(page) -> str:
    """The day of the first heading at or below the header's bottom edge."""
    return page.evaluate(
        """() => {
          const edge = document.querySelector('.topbar').getBoundingClientRect().bottom - 2;
          const below = [...document.querySelectorAll('.day-heading')]
            .filter((h) => h.getBoundingClientRect().top >= edge)
            .sort((a, b) => a.getBoundingClientRect().top - b.getBoundingClientRect().top);
          return below.length ? below[0].dataset.day : null;
        }"""
    )


def test_a_large_timeline_scrolls_and_the_scrubber_jumps_to_a_month(empty_server, page, shots):
    seen = route_fake_library(page)
    sign_in(page, empty_server, "/library?limit=100")
    expect(page.locator(".gallery-status")).to_have_text("3,600 photos")
    headings = page.locator(".day-heading")
    expect(headings.first).to_have_attribute("data-day", "2023-12-31")
    tiles = page.locator(".gallery .tile")
    expect(tiles.first).to_be_visible()
    assert 0 < tiles.count() < 300, "only the rows near the viewport are in the DOM"
    # Justified rows: the photos of a row share its height and fill its width.
    rows = page.evaluate(
        """() => {
          const rows = {};
          for (const t of document.querySelectorAll('.gallery .tile')) {
            const r = t.getBoundingClientRect();
            (rows[Math.round(r.top)] ||= []).push([r.left, r.right, r.height]);
          }
          return Object.values(rows);
        }"""
    )
    width = page.evaluate("document.querySelector('.gallery').clientWidth")
    full = [row for row in rows if len(row) > 1][:3]
    for row in full:
        assert len({round(height) for _, _, height in row}) == 1, row
        assert abs((max(r for _, r, _ in row) - min(left for left, _, _ in row)) - width) < 2
    page.screenshot(path=shots / "timeline.png")

    # The whole five years have their height before they are read: the page is long.
    height = page.evaluate("document.body.scrollHeight")
    assert height > 40 * page.viewport_size["height"]
    # Scrolling on reads the months it reaches, and only those.
    page.mouse.wheel(0, 3000)
    expect(page.locator(".day-heading[data-day='2023-11-30']")).to_have_count(1)
    assert {q["taken_from"][:7] for q in seen} <= {"2023-12", "2023-11", "2023-10", "2023-09"}

    # The scrubber: a press on March 2020's mark lands on its first day (newest first).
    mark = page.locator(".scrubber-month[data-month='2020-03']")
    box = mark.bounding_box()
    scrubber = page.locator(".scrubber").bounding_box()
    page.mouse.click(scrubber["x"] + scrubber["width"] / 2, box["y"] + box["height"] / 2)
    expect(page.locator(".day-heading[data-day='2020-03-31']")).to_be_in_viewport()
    expect(page.locator(".gallery .tile").first).to_be_visible()
    page.wait_for_load_state("networkidle")
    assert top_heading(page) == "2020-03-31"
    months = {q["taken_from"][:7] for q in seen}
    assert "2020-03" in months
    assert not months & {"2022-06", "2021-06"}, "a jump reads the month it lands on"
    assert page.locator(".gallery .tile").count() < 300
    page.screenshot(path=shots / "timeline-jumped.png")

    # A year's label jumps to the newest month of that year.
    page.get_by_role("button", name="Jump to December 2021").click()
    page.wait_for_load_state("networkidle")
    assert top_heading(page) == "2021-12-31"


def test_the_viewer_steps_by_keyboard_and_downloads_the_original(page, library_server, shots):
    server, photos = library_server
    with server.client() as http:
        newest = http.get("/api/assets", params={"sort": "taken-desc", "limit": 3}).json()
    sign_in(page, server, "/library")
    tiles = page.locator(".gallery .tile")
    expect(tiles.first).to_have_attribute("data-asset-id", str(newest["assets"][0]["id"]))
    first_day = newest["assets"][0]["taken_local"][:10]
    expect(page.locator(".day-heading").first).to_have_attribute("data-day", first_day)
    page.screenshot(path=shots / "library.png", full_page=True)

    page.locator(".tile-button").first.click()
    dialog = page.get_by_role("dialog")
    taken = dialog.locator(".taken")
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][0]["taken_local"])
    page.keyboard.press("ArrowRight")
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][1]["taken_local"])
    page.keyboard.press("ArrowLeft")
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][0]["taken_local"])

    with server.client() as http:
        detail = http.get(f"/api/assets/{newest['assets'][0]['id']}").json()
    original = next(photos.rglob(detail["files"][0]["path"].rpartition("/")[2]))
    with page.expect_download() as downloading:
        dialog.get_by_role("link", name="Download the original").click()
    download = downloading.value
    expect(dialog.locator("img.preview")).to_have_js_property("complete", True)
    assert download.suggested_filename == original.name
    assert Path(download.path()).read_bytes() == original.read_bytes()
    page.screenshot(path=shots / "viewer.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()


@pytest.fixture
def phone(browser):
    """A page in a phone's viewport (390 × 844, touch)."""
    context = browser.new_context(
        viewport={"width": 390, "height": 844}, has_touch=True, is_mobile=True
    )
    context.set_default_timeout(20_000)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert not errors, errors


def test_at_390_px_a_row_holds_three_or_four_photos(empty_server, phone, shots):
    route_fake_library(phone, portraits=False)
    sign_in(phone, empty_server, "/library")
    expect(phone.locator(".gallery .tile").first).to_be_visible()
    per_row = phone.evaluate(
        """() => {
          const rows = {};
          for (const t of document.querySelectorAll('.gallery .tile')) {
            const top = Math.round(t.getBoundingClientRect().top);
            rows[top] = (rows[top] || 0) + 1;
          }
          return Object.values(rows);
        }"""
    )
    # 20 photos of 4:3 a day: rows of three or four, and the day's last row shorter.
    full = [n for n in per_row if n in (3, 4)]
    assert max(per_row) <= 4 and len(full) >= 0.7 * len(per_row), per_row
    assert phone.evaluate("document.documentElement.scrollWidth") <= 390
    # The scrubber runs beside the timeline: once it is scrolled to, along its height.
    phone.locator(".day-heading").first.scroll_into_view_if_needed()
    phone.mouse.wheel(0, 400)
    expect(phone.locator(".scrubber-year[data-year='2023']")).to_be_visible()
    phone.screenshot(path=shots / "timeline-390.png")


def test_at_390_px_the_viewer_is_full_screen_and_a_swipe_steps_it(library_server, phone, shots):
    server, _ = library_server
    with server.client() as http:
        newest = http.get("/api/assets", params={"sort": "taken-desc", "limit": 2}).json()
    sign_in(phone, server, "/library")
    phone.locator(".tile-button").first.tap()
    dialog = phone.get_by_role("dialog")
    taken = dialog.locator(".taken")
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][0]["taken_local"])
    box = dialog.bounding_box()
    assert (box["x"], box["y"], box["width"], box["height"]) == (0, 0, 390, 844)
    expect(dialog.locator("img.preview")).to_have_js_property("complete", True)
    preview = dialog.locator("figure.asset-preview").bounding_box()
    y = preview["y"] + preview["height"] / 2
    # A real touch swipe, right to left: the next photo; left to right: back.
    cdp = phone.context.new_cdp_session(phone)

    def swipe(xs: list[int]) -> None:
        touch = "Input.dispatchTouchEvent"
        cdp.send(touch, {"type": "touchStart", "touchPoints": [{"x": xs[0], "y": y}]})
        for x in xs[1:]:
            cdp.send(touch, {"type": "touchMove", "touchPoints": [{"x": x, "y": y}]})
        cdp.send(touch, {"type": "touchEnd", "touchPoints": []})

    swipe([320, 280, 220, 160, 100])
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][1]["taken_local"])
    expect(dialog.locator("img.preview")).to_have_js_property("complete", True)
    phone.screenshot(path=shots / "viewer-390.png")
    expect(dialog.locator("img.preview")).to_have_js_property("complete", True)
    swipe([80, 140, 200, 260, 320])
    expect(taken).to_have_attribute("data-taken-local", newest["assets"][0]["taken_local"])
