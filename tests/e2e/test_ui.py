"""The web UI in a real headless Chromium against a real server: sign-in, live job
progress, cancel, the gallery and asset view, duplicates, organize."""

from __future__ import annotations

import json
import re

import httpx
import pytest
from PIL import ExifTags, Image

from photo_pipeline.sample import write_sample
from tests.e2e.conftest import (
    SAMPLE_PHOTOS,
    require_chromium,
    sign_in,
    wait_for_jobs,
)
from tests.support.api_server import TOKEN, running_server
from tests.support.cli_processes import run_command

pytestmark = pytest.mark.timeout(120)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


# Tests take the server before the page: the page (and its event stream) closes
# first, so the server stops at once instead of waiting for the stream to end.
@pytest.fixture
def empty_server(tmp_path):
    require_chromium()
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        yield server


def test_sign_in_refuses_a_wrong_token_and_pages_are_locked_down(empty_server, page, shots):
    answer = httpx.get(empty_server.base_url + "/library")
    policy = answer.headers["content-security-policy"]
    assert answer.status_code == 200 and "script-src 'self'" in policy
    assert "unsafe-inline" not in policy

    page.goto(empty_server.base_url + "/")
    page.screenshot(path=shots / "sign-in.png")
    page.get_by_label("API token").fill("not-the-token")
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("alert")).to_contain_text("not accepted")
    page.get_by_label("API token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Jobs", exact=True)).to_be_visible()
    expect(page.get_by_text("No jobs yet")).to_be_visible()
    page.screenshot(path=shots / "jobs-empty.png")
    # The token lives in the tab's session storage, never in a URL.
    assert TOKEN not in page.url
    assert page.evaluate("sessionStorage.getItem('photo-pipeline.token')") == TOKEN

    # A refused token (rotated on the server, say) brings the sign-in back, and
    # signing in again returns to the page asked for.
    page.evaluate("sessionStorage.setItem('photo-pipeline.token', 'rotated-away')")
    page.get_by_role("link", name="Library", exact=True).click()
    expect(page.get_by_role("alert")).to_contain_text("Sign in again")
    page.get_by_label("API token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.get_by_role("heading", name="Library", exact=True)).to_be_visible()
    expect(page.get_by_text("The library is empty")).to_be_visible()


def test_an_import_started_in_the_ui_shows_live_progress_to_100(
    empty_server, page, tmp_path, shots
):
    photos = tmp_path / "photos"
    write_sample(photos, 16)
    list_requests = []

    def count_list_requests(request) -> None:
        if request.method == "GET" and re.search(r"/api/jobs(\?|$)", request.url):
            list_requests.append(request.url)

    page.on("request", count_list_requests)
    sign_in(page, empty_server)
    expect(page.get_by_text("No jobs yet")).to_be_visible()
    page.evaluate("window.notReloaded = true")
    lists_before = len(list_requests)

    page.get_by_label("Folder path on the server").fill(str(photos))
    page.get_by_role("button", name="Start import").click()
    # The scan's broken file is a problem to look at, not plain success.
    for job_type, outcome in (("scan", "succeeded · 1 problem"), ("render", "succeeded")):
        row = page.locator(f"tr[data-job-type='{job_type}']")
        expect(row.locator("progress")).to_have_attribute("data-percent", "100")
        expect(row.locator(".badge")).to_have_text(outcome)
    scan = page.locator("tr[data-job-type='scan']")
    # 16 photos, 2 exact copies, 2 edits and a broken file: 21 items, one failed.
    expect(scan.locator(".progress-label")).to_have_text("21 / 21 · 100%")
    expect(scan.locator(".progress-detail")).to_contain_text("1 failed")
    expect(page.locator("tr[data-job-type='similar'] .badge")).to_have_text("succeeded")
    expect(page.locator("tr[data-job-type='similar'] .chain")).to_contain_text("scan")
    page.screenshot(path=shots / "jobs-after-import.png", full_page=True)
    # Live: the same page (no reload), and the job list was never fetched again.
    assert page.evaluate("window.notReloaded") is True
    assert len(list_requests) == lists_before

    # The scan's detail: its failed item with the error code.
    scan.get_by_role("link").first.click()
    page.get_by_role("button", name=re.compile("^failed")).click()
    failed = page.locator("tr[data-item-state='failed']")
    expect(failed).to_have_count(1)
    expect(failed).to_contain_text("broken.jpg")
    expect(failed.locator("code")).to_have_text(re.compile(r"\w+"))
    expect(page.locator(".timeline")).to_contain_text("succeeded")
    page.screenshot(path=shots / "job-detail.png", full_page=True)


def test_an_import_can_read_every_file_again(empty_server, page, tmp_path):
    photos = tmp_path / "photos"
    write_sample(photos, 3)
    every_file = f"{sum(1 for p in photos.rglob('*') if p.is_file())}"
    sign_in(page, empty_server)
    page.get_by_label("Folder path on the server").fill(str(photos))
    page.get_by_role("button", name="Start import").click()
    scans = page.locator("tr[data-job-type='scan']")
    expect(scans.locator(".badge")).to_have_text("succeeded · 1 problem")  # broken.jpg
    expect(scans.locator(".progress-label")).to_have_text(f"{every_file} / {every_file} · 100%")
    wait_for_jobs(empty_server)

    # Again without the box: nothing changed, nothing read. With it: every file.
    page.get_by_label("Folder path on the server").fill(str(photos))
    page.get_by_role("button", name="Start import").click()
    expect(scans).to_have_count(2)
    expect(scans.first.locator(".badge")).to_have_text("succeeded")
    expect(scans.first.locator(".progress-label")).to_have_text("No items")
    wait_for_jobs(empty_server)
    page.get_by_label("Folder path on the server").fill(str(photos))
    page.get_by_label("Read every file again").check()
    page.get_by_role("button", name="Start import").click()
    expect(scans).to_have_count(3)
    expect(scans.first.locator(".progress-label")).to_have_text(
        f"{every_file} / {every_file} · 100%"
    )
    expect(page.get_by_label("Read every file again")).not_to_be_checked()
    newest = empty_server.library.service.list_jobs(limit=500)
    assert [j["params"].get("reread") for j in newest if j["job_type"] == "scan"] == [
        True,
        None,
        None,
    ]


def test_a_running_job_is_cancelled_from_the_ui(page, library_server, tmp_path, shots):
    server, _ = library_server
    body = {
        "type": "test.record",
        "params": {
            "log": str(tmp_path / "run.log"),
            "items": [f"slow-{n}" for n in range(2000)],
            "item_seconds": 0.05,
        },
    }
    with server.client() as http:
        job = http.post("/api/jobs", json=body).json()
    sign_in(page, server)
    row = page.locator(f"tr[data-job-id='{job['id']}']")
    expect(row.locator(".badge")).to_have_text("running")
    expect(row.locator(".progress-label")).to_contain_text(re.compile(r"[1-9]\d* / 2,?000"))
    page.screenshot(path=shots / "jobs-running.png")
    row.get_by_role("button", name="Cancel").click()
    expect(row.locator(".badge")).to_have_text("cancelled")
    expect(row.get_by_role("button", name="Retry")).to_be_visible()
    page.screenshot(path=shots / "jobs-cancelled.png")
    assert server.library.service.get(job["id"])["state"] == "cancelled"


def _exif_date(path) -> str:
    with Image.open(path) as image:
        raw = image.getexif().get_ifd(ExifTags.IFD.Exif)[ExifTags.Base.DateTimeOriginal]
    day, time = raw.split(" ")
    return f"{day.replace(':', '-')} {time}"


def test_the_gallery_shows_every_photo_and_opens_its_preview(page, library_server, shots):
    server, photos = library_server
    asset_pages = []
    page.on("request", lambda r: asset_pages.append(r.url) if "/api/assets?" in r.url else None)
    sign_in(page, server, "/library?limit=10")
    tiles = page.locator(".gallery .tile")
    # The timeline is virtualised (only rows near the viewport are in the DOM): the
    # count is what the user reads, and scrolling to the end renders the oldest photo.
    expect(page.locator(".gallery-status")).to_have_text(f"{SAMPLE_PHOTOS + 2} photos")
    with server.client() as http:
        listed = http.get("/api/assets", params={"limit": 500, "sort": "taken-desc"}).json()
    every_id = [str(asset["id"]) for asset in listed["assets"]]
    assert len(every_id) == SAMPLE_PHOTOS + 2
    expect(tiles.first).to_have_attribute("data-asset-id", every_id[0])  # newest first
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    expect(page.locator(f".gallery .tile[data-asset-id='{every_id[-1]}']")).to_be_visible()
    expect(tiles.last).to_have_attribute("data-asset-id", every_id[-1])
    assert len(asset_pages) >= 3, "the timeline reads its months page by page"
    page.locator(".gallery img.thumb").last.scroll_into_view_if_needed()
    # (Not wait_for_function: its string predicates are eval'd, which the CSP forbids.)
    for thumb in page.locator(".gallery img.thumb").all():
        expect(thumb).to_have_js_property("complete", True)
    broken = "[...document.querySelectorAll('.gallery img.thumb')].filter(i => !i.naturalWidth)"
    assert page.evaluate(f"{broken}.length") == 0
    page.evaluate("window.scrollTo(0, 0)")  # the sticky header belongs on top
    page.screenshot(path=shots / "library.png", full_page=True)

    photo = sorted(photos.glob("2023-*/IMG_0005.jpg"))[0]
    taken = _exif_date(photo)
    page.get_by_role("button", name=f"Open photo: {taken}").first.click()
    dialog = page.get_by_role("dialog")
    expect(dialog.locator(".taken")).to_have_text(taken)
    expect(dialog.locator(".taken-source")).to_have_text("EXIF DateTimeOriginal")
    expect(dialog).to_contain_text("IMG_0005.jpg")
    preview = dialog.locator("img.preview")
    expect(preview).to_be_visible()
    expect(preview).to_have_js_property("complete", True)
    assert preview.evaluate("image => image.naturalWidth") > 0
    page.screenshot(path=shots / "asset.png")
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # By keyboard: a tile is a button; arrows step through the photos.
    first, second = page.locator(".tile-button").nth(0), page.locator(".tile-button").nth(1)
    first.focus()
    page.keyboard.press("Enter")
    expect(dialog.locator(".taken")).to_have_text(first.locator(".tile-date").inner_text())
    page.keyboard.press("ArrowRight")
    expect(dialog.locator(".taken")).to_have_text(second.locator(".tile-date").inner_text())
    page.keyboard.press("Escape")
    expect(dialog).to_be_hidden()

    # A filter narrows the grid: the near duplicates only.
    page.get_by_label("Duplicates").select_option("near")
    expect(tiles).to_have_count(4)


def test_the_asset_view_names_the_district_the_place_filter_finds(page, library_server):
    server, _ = library_server
    with server.client() as http:
        listed = http.get("/api/assets", params={"limit": 500}).json()["assets"]
    # The sample's GPS photos lie north-east of Paris: most in a district of a city.
    placed = [a for a in listed if a["district"]]
    assert placed, "the sample library has photos in a district"
    district = placed[0]["district"]
    in_district = {str(a["id"]) for a in listed if a["district"] == district}
    with server.client() as http:
        detail = http.get(f"/api/assets/{placed[0]['id']}").json()
    sign_in(page, server, "/library")
    page.get_by_label("Place").fill(district)
    tiles = page.locator(".gallery .tile")
    expect(tiles).to_have_count(len(in_district))
    assert {t.get_attribute("data-asset-id") for t in tiles.all()} == in_district
    page.locator(f".gallery .tile[data-asset-id='{placed[0]['id']}'] .tile-button").click()
    place = ", ".join(
        detail[key] for key in ("district", "city", "region", "country") if detail[key]
    )
    expect(page.get_by_role("dialog").locator(".place")).to_have_text(place)


def test_the_duplicates_page_shows_the_near_duplicate_group(page, library_server, shots):
    server, photos = library_server
    sign_in(page, server, "/duplicates")
    page.get_by_role("button", name=re.compile("^Near")).click()
    group = page.locator("article.dup-group.near").filter(has_text="IMG_0000_small.jpg")
    expect(group).to_have_count(1)
    expect(group.locator(".choice")).to_have_count(2)
    keeper = group.locator(".choice.keeper")
    expect(keeper).to_contain_text("Suggested keeper")
    expect(keeper).to_contain_text("IMG_0000.jpg")
    expect(keeper.locator("input")).to_be_checked()
    page.screenshot(path=shots / "duplicates-near.png", full_page=True)

    group.get_by_role("button", name="Keep selected").click()
    expect(group.locator(".form-status")).to_contain_text("Decision recorded")
    with server.client() as http:
        near = http.get("/api/duplicates").json()["near"]
    decided = [g for g in near if g["decision"]]
    assert len(decided) == 1 and len(decided[0]["decision"]["keep"]) == 1
    assert (photos / "edits" / "IMG_0000_small.jpg").exists(), "deciding deletes nothing"

    page.get_by_role("button", name=re.compile("^Exact")).click()
    expect(page.locator("article.dup-group.exact")).to_have_count(2)
    page.screenshot(path=shots / "duplicates-exact.png", full_page=True)


def test_the_organize_preview_matches_the_cli_dry_run(page, library_server, tmp_path, shots):
    server, _ = library_server
    dest = tmp_path / "organized"
    dest.mkdir()
    template = "{taken:%Y}/{make}/{taken:%Y%m%d_%H%M%S}_{original_name}.{ext}"
    sign_in(page, server, "/organize")
    page.get_by_label("Destination folder").fill(str(dest))
    page.get_by_label("Template").fill(template)
    rows = page.locator(".plan-table tbody tr")
    expect(rows.first).to_be_visible()
    # The preview follows the template as it is typed (no button to press).
    expect(rows.first.locator(".destination")).to_have_text(
        re.compile(r"^2023/(Canon|Apple|FUJIFILM)/2023\d{4}_\d{6}_IMG_\d{4}(_small)?\.jpg$")
    )
    page.screenshot(path=shots / "organize-preview.png", full_page=True)

    lib = server.library
    cli = run_command(
        str(lib.sessions.kw["bind"].url.render_as_string(hide_password=False)),
        lib.settings.home,
        "organize",
        "--dest",
        str(dest),
        "--template",
        template,
        "--dry-run",
        "--json",
    )
    assert cli.returncode == 0, cli.stderr
    plan = json.loads(cli.stdout)
    shown = [
        (
            row.locator(".path").nth(0).get_attribute("title"),
            row.locator(".path").nth(1).get_attribute("title"),
            row.locator(".badge").inner_text(),
        )
        for row in rows.all()
    ]
    expected = [(e["source"], e["destination"], e["action"]) for e in plan["entries"]]
    assert shown == expected[: len(shown)]
    assert len(shown) == min(50, len(expected))

    page.get_by_role("button", name="Start organize").click()
    following = page.locator(".following")
    expect(following.locator(".badge")).to_have_text("succeeded")
    expect(following.locator("progress")).to_have_attribute("data-percent", "100")
    organize_id = following.get_attribute("data-job-id")
    assert any(dest.rglob("*.jpg"))
    page.screenshot(path=shots / "organize-done.png", full_page=True)

    page.get_by_role("button", name=re.compile("^Undo organize")).click()
    undo = page.locator(f".following:not([data-job-id='{organize_id}'])")
    expect(undo.locator(".badge")).to_have_text("succeeded")
    expect(page.locator(".undo-link")).to_be_visible()
    wait_for_jobs(server)
    assert not any(dest.rglob("*.jpg")), "the undo removed the copies"
