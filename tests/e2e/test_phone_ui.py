"""Every page of the web UI at a phone's size (390×844 CSS px, device pixel ratio 3,
touch) in a real Chromium, over a library with something on every page: an import
with a broken file (a job with a failed item), a verify that found a changed and a
missing file, an organize that ran, a dedupe plan of exact copies and near
duplicates, an album, a schedule, photos with GPS. No element may reach past the
viewport's width (the page never scrolls sideways; a wide table scrolls inside its
card), controls are at least 40 px tall, and the header's menu opens, closes
(button, Escape) and navigates. A screenshot of each page is saved."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from pprint import pformat

import pytest

from photo_pipeline.jobs.schedules.book import Schedules
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.verify import start_verify
from photo_pipeline.sample import write_sample
from tests.e2e.conftest import Failures, require_chromium, sign_in, wait_for_jobs
from tests.support.api_server import ApiServer, running_server

pytestmark = pytest.mark.timeout(240)
PHONE = {"width": 390, "height": 844}
SMALLEST_TARGET = 40  # CSS px: a fingertip's target, the brief's minimum
# The library page's grid, tiles and viewer are laid out by library.js (its own work);
# here the parts around them: the header, the search box, the upload panel.
LIBRARY_PARTS = ".topbar, .search-box, .upload-panel"

# Every visible element whose box reaches past the viewport's sides and that no
# ancestor clips (a scroll container inside the page, the map's frame). An absolutely
# positioned element is clipped only from its containing block up: a visually hidden
# table header inside a scrolling table still widens the page.
OVERFLOWING = """(width) => {
  const clips = (el) => getComputedStyle(el).overflowX !== "visible";
  function clipped(el) {
    const position = getComputedStyle(el).position;
    if (position === "fixed") return false;
    // offsetParent: the containing block (an SVG element has none: its parent).
    let node = position === "absolute" && "offsetParent" in el ? el.offsetParent : el.parentElement;
    for (; node && node !== document.body; node = node.parentElement) if (clips(node)) return true;
    return false;
  }
  const out = [];
  for (const el of document.body.querySelectorAll("*")) {
    if (!el.checkVisibility({ visibilityProperty: true })) continue; // a closed <details>' too
    const box = el.getBoundingClientRect();
    if (box.right <= width + 0.5 && box.left >= -0.5) continue;
    if (clipped(el)) continue;
    const name = el.tagName.toLowerCase() + (el.className && typeof el.className === "string"
      ? "." + el.className.trim().split(/\\s+/).join(".") : "");
    const text = el.textContent.trim().slice(0, 40);
    out.push(`${name} ${Math.round(box.left)}..${Math.round(box.right)} "${text}"`);
  }
  const root = document.documentElement;
  return {out, scroll: root.scrollWidth, client: root.clientWidth};
}"""

# Controls inside ``scope`` (a selector) shorter than a fingertip: buttons, fields,
# menus, the header's links; a checkbox or radio by the label around it (its target).
SMALL_TARGETS = """([least, scope]) => {
  const out = [];
  const seen = new Set();
  const kinds = "button, select, input, textarea, .topbar a, [role=button], summary";
  const controls = [...document.querySelectorAll(scope)].flatMap((root) => [
    ...root.querySelectorAll(kinds)]);
  for (let el of controls) {
    if (el.matches("input[type=checkbox], input[type=radio]")) el = el.closest("label") || el;
    if (el.matches("input[type=hidden], input[type=file]") || seen.has(el)) continue;
    seen.add(el);
    if (!el.checkVisibility({ visibilityProperty: true })) continue;
    if (el.closest(".leaflet-container, .visually-hidden, [hidden]")) continue;
    const box = el.getBoundingClientRect();
    if (box.height < least - 0.5) {
      const label = (el.getAttribute("aria-label") || el.textContent || el.name || "").trim();
      out.push(`${el.tagName.toLowerCase()} "${label.slice(0, 30)}" ${box.height.toFixed(1)}px`);
    }
  }
  return out;
}"""


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture(scope="module")
def full_library(tmp_path_factory) -> Iterator[tuple[ApiServer, dict[str, str]]]:
    """A server with something on every page, and the ids of the jobs to look at."""
    require_chromium()
    root = tmp_path_factory.mktemp("phone")
    photos = root / "photos"
    written = write_sample(photos, 12)
    with running_server(
        f"sqlite:///{root / 'library.sqlite3'}", root / "home", embedded_workers=2
    ) as server:
        lib = server.library
        imported = import_folders(lib.service, lib.catalog, [photos], follow_up=lib.settings)
        wait_for_jobs(server)
        ids = {"scan": imported[0]["id"]}
        with server.client() as http:
            organized = http.post(
                "/api/jobs",
                json={"type": "organize", "params": {"dest": str(root / "organized")}},
            )
            assert organized.status_code == 201, organized.text
            ids["organize"] = organized.json()["id"]
            wait_for_jobs(server)
            album = http.post("/api/albums", json={"name": "Paris, June 2023 — the long weekend"})
            assets = http.get("/api/assets", params={"limit": 6}).json()["assets"]
            http.post(
                f"/api/albums/{album.json()['id']}/assets", json={"ids": [a["id"] for a in assets]}
            ).raise_for_status()
            ids["album"] = str(album.json()["id"])
        Schedules(lib.service).add("verify", {"sample": 25}, cron="0 4 * * 0")
        # A verify that finds one file changed and one missing: problems with advice.
        changed = bytearray(written[5].read_bytes())
        changed[len(changed) // 2] ^= 0x10
        written[5].write_bytes(bytes(changed))
        written[6].unlink()
        ids["verify"] = start_verify(lib.service).job["id"]
        wait_for_jobs(server)
        yield server, ids


@pytest.fixture
def phone(browser):
    context = browser.new_context(
        viewport=PHONE, device_scale_factor=3, is_mobile=True, has_touch=True
    )
    context.set_default_timeout(20_000)
    page = context.new_page()
    failures = Failures()
    page.on("console", failures.console)
    page.on("pageerror", failures.page_error)
    yield page
    context.close()
    assert not failures.seen, failures.seen


class Fit:
    """What each page showed that does not fit a phone, to be asserted at the end
    (one run names every page's faults, not only the first page's)."""

    def __init__(self, page, shots: Path) -> None:
        self.page, self.shots = page, shots
        self.faults: dict[str, object] = {}

    def check(self, name: str, *, touch: str | None = "body") -> None:
        """Nothing reaches past the phone's width and every control in ``touch`` (a
        selector; None: none) is a fingertip's size; then the full page's screenshot."""
        found = self.page.evaluate(OVERFLOWING, PHONE["width"])
        if found["out"] or found["scroll"] > PHONE["width"] or found["client"] != PHONE["width"]:
            self.faults[f"{name}: overflow"] = found
        small = self.page.evaluate(SMALL_TARGETS, [SMALLEST_TARGET, touch]) if touch else []
        if small:
            self.faults[f"{name}: small targets"] = small
        self.page.screenshot(path=self.shots / f"{name}.png", full_page=True)


def open_page(page, path: str) -> None:
    """Go to ``path`` through the app's own router (no reload: the session stays)."""
    page.evaluate(
        """(path) => {
          history.pushState(null, "", path);
          dispatchEvent(new PopStateEvent("popstate"));
        }""",
        path,
    )


def test_every_page_fits_a_phone(full_library, phone, shots):
    server, ids = full_library
    page = phone
    fit = Fit(page, shots)
    page.goto(server.base_url + "/jobs")
    expect(page.get_by_label("API token")).to_be_visible()
    fit.check("00-sign-in")
    sign_in(page, server)

    expect(page.locator("tr[data-job-type='verify'] .badge")).to_have_text("succeeded · 2 problems")
    fit.check("01-jobs")

    open_page(page, f"/jobs/{ids['verify']}")
    expect(page.locator(".problems-card h2")).to_have_text("2 files to look at")
    fit.check("02-job-verify-problems")

    open_page(page, f"/jobs/{ids['scan']}")
    expect(page.locator(".page-actions .badge")).to_be_visible()
    fit.check("03-job-scan-failed-item")

    open_page(page, f"/jobs/{ids['organize']}")
    expect(page.locator(".page-actions .badge")).to_have_text("succeeded")
    fit.check("04-job-organize")

    open_page(page, "/library")
    expect(page.locator(".tile").first).to_be_visible()
    fit.check("05-library", touch=LIBRARY_PARTS)

    # Select mode's bar, its curation fields and the Set date dialog.
    page.get_by_role("button", name="Select", exact=True).tap()
    tiles = page.locator(".gallery .tile .tile-button")
    tiles.nth(0).tap()
    tiles.nth(1).tap()
    expect(page.get_by_role("status").filter(has_text="selected")).to_have_text("2 photos selected")
    fit.check("05-library-selecting", touch=LIBRARY_PARTS)
    page.get_by_role("button", name="Set date…").tap()
    dialog = page.get_by_role("dialog", name="Set the date of 2 photos")
    expect(dialog).to_be_visible()
    fit.check("05-library-set-date-dialog", touch="dialog[open]")
    dialog.get_by_role("button", name="Cancel").tap()
    expect(dialog).to_be_hidden()

    open_page(page, "/library?q=canon")
    expect(page.locator(".tile").first).to_be_visible()
    fit.check("06-search-results", touch=LIBRARY_PARTS)

    open_page(page, "/albums")
    expect(page.locator(".album-card")).to_have_count(1)
    fit.check("07-albums")

    open_page(page, f"/albums/{ids['album']}")
    expect(page.locator(".album-photo")).to_have_count(6)
    fit.check("08-album")

    open_page(page, "/places")
    expect(page.locator(".map-cluster, .map-photo").first).to_be_visible()
    fit.check("09-places")

    open_page(page, "/duplicates")
    expect(page.locator(".dedupe-plan article.dedupe-group").first).to_be_visible()
    fit.check("10-duplicates-plan")
    page.get_by_role("button", name=re.compile("^Exact")).click()
    expect(page.locator("article.dup-group.exact").first).to_be_visible()
    fit.check("11-duplicates-exact")
    page.get_by_role("button", name=re.compile("^Near")).click()
    expect(page.locator("article.dup-group.near").first).to_be_visible()
    fit.check("12-duplicates-near")

    open_page(page, "/organize")
    page.get_by_label("Destination folder").fill("/tmp/organized-on-a-phone")
    expect(page.locator(".plan-table tbody tr").first).to_be_visible()
    expect(page.locator("tr .undo-link, button[aria-label^='Undo organize']").first).to_be_visible()
    fit.check("13-organize")

    open_page(page, "/schedules")
    expect(page.locator("tr[data-job-type=verify]")).to_contain_text("0 4 * * 0")
    fit.check("14-schedules")

    open_page(page, "/nowhere")
    expect(page.get_by_text("Page not found")).to_be_visible()
    fit.check("15-not-found")

    page.goto(server.base_url + "/docs")
    title = page.locator(".swagger-ui .info .title")
    expect(title).to_contain_text("photo-pipeline", timeout=30_000)  # a large bundle
    fit.check("16-api-docs", touch=None)
    assert not fit.faults, pformat(fit.faults, width=100)


def test_the_menu_opens_closes_and_navigates(full_library, phone, shots):
    server, _ = full_library
    page = phone
    sign_in(page, server)
    menu_button = page.get_by_role("button", name="Menu")
    albums = page.get_by_role("navigation", name="Main").get_by_role("link", name="Albums")
    expect(menu_button).to_have_attribute("aria-expanded", "false")
    expect(albums).to_be_hidden()
    box = menu_button.bounding_box()
    assert box and box["height"] >= SMALLEST_TARGET

    # Opened: every page's link and the account's actions, a fingertip tall each; the
    # focus on the current page's link.
    menu_button.tap()
    expect(menu_button).to_have_attribute("aria-expanded", "true")
    expect(albums).to_be_visible()
    expect(page.get_by_role("link", name="Jobs", exact=True)).to_be_focused()
    expect(page.get_by_role("link", name="API docs")).to_have_attribute("href", "/docs")
    fit = Fit(page, shots)
    fit.check("menu-open")
    assert not fit.faults, pformat(fit.faults, width=100)

    # Escape closes it and gives the focus back to its button.
    page.keyboard.press("Escape")
    expect(menu_button).to_have_attribute("aria-expanded", "false")
    expect(albums).to_be_hidden()
    expect(menu_button).to_be_focused()

    # A link goes there and the menu folds away.
    menu_button.tap()
    albums.tap()
    expect(page).to_have_url(re.compile(r"/albums$"))
    expect(page.get_by_role("heading", name="Albums", exact=True)).to_be_visible()
    expect(menu_button).to_have_attribute("aria-expanded", "false")
    expect(page.locator(".topbar [data-nav=albums]")).to_have_attribute("aria-current", "page")

    # A tap outside closes it; so does the focus leaving it by keyboard.
    menu_button.tap()
    expect(albums).to_be_visible()
    page.touchscreen.tap(PHONE["width"] / 2, PHONE["height"] - 40)  # below the open menu
    expect(menu_button).to_have_attribute("aria-expanded", "false")
    menu_button.focus()
    page.keyboard.press("Enter")
    expect(albums).to_be_focused()
    page.get_by_role("button", name="Sign out").focus()
    page.keyboard.press("Tab")
    expect(menu_button).to_have_attribute("aria-expanded", "false")


# The header's row: folded or not, its height, and what reaches out of it (a folded
# menu's panel hangs below the row by design, and is closed here).
HEADER_FITS = """() => {
  const header = document.querySelector(".topbar");
  const row = header.getBoundingClientRect();
  const outside = [...header.querySelectorAll("*")].filter((el) => {
    if (!el.checkVisibility()) return false;
    const box = el.getBoundingClientRect();
    return box.right > row.right + 0.5 || box.bottom > row.bottom + 0.5 || box.left < row.left;
  });
  return {
    folded: getComputedStyle(header.querySelector(".menu-button")).display !== "none",
    height: row.height,
    scroll: header.scrollWidth - header.clientWidth,
    outside: outside.map((el) => el.textContent.trim().slice(0, 20)),
  };
}"""


@pytest.mark.parametrize("width", [1360, 1241, 1240, 1181, 1180, 901, 900, 390])
def test_the_header_is_one_row_at_every_width(full_library, browser, width):
    """Wide, the links stand in the header's row as they always did; from 1180 px down
    they fold behind the menu button. At no width does the row spill or scroll."""
    server, _ = full_library
    context = browser.new_context(viewport={"width": width, "height": 800})
    try:
        page = context.new_page()
        sign_in(page, server)
        found = page.evaluate(HEADER_FITS)
        assert found["folded"] is (width <= 1180), found
        assert found["height"] == 58 and found["scroll"] == 0 and found["outside"] == [], found
    finally:
        context.close()
