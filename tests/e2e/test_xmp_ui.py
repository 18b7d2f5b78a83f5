"""XMP sidecars in a real Chromium (#34): a rating given in the viewer is written to
the photo's sidecar (read back with exiftool); the sidecar's rating changed by another
program shows after a rescan; a second rating's XMP batch undone from its job page
puts the sidecar back, and the viewer shows the rating it holds again."""

from __future__ import annotations

import json
import subprocess

import pytest

from photo_pipeline.jobs import JobState
from photo_pipeline.pipeline import xmp
from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.cli_processes import wait_until

pytestmark = pytest.mark.timeout(180)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def two_photos(tmp_path):
    require_chromium()
    root = tmp_path / "roll"
    for n in range(2):
        photos.jpeg(root / f"IMG_{n:04d}.jpg", size=(96, 64), seed=n,
                    taken=f"2024:05:0{n + 1} 10:00:00", offset=None)  # fmt: skip
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server, root


def sidecar_rating(path) -> int | None:
    """The rating exiftool (the command) reads in the sidecar, None: no sidecar."""
    if not path.exists():
        return None
    done = subprocess.run(
        ["exiftool", "-json", "-XMP-xmp:Rating", str(path)], capture_output=True, check=True
    )
    return json.loads(done.stdout)[0].get("Rating")


def xmp_jobs(server) -> list[dict]:
    jobs = server.library.service.list_jobs(limit=500)
    return sorted((j for j in jobs if j["job_type"] == xmp.JOB_TYPE), key=lambda j: j["created_at"])


def open_first(page):
    page.locator(".gallery .tile").first.locator(".tile-button").click()
    panel = page.get_by_role("dialog").get_by_role("region", name="Curation")
    expect(panel).to_be_visible()
    return panel


def test_sidecars_written_read_back_after_a_rescan_and_undone(two_photos, page, shots):
    server, root = two_photos
    sidecar = root / "IMG_0000.xmp"
    sign_in(page, server, "/library?order=oldest")
    expect(page.locator(".gallery .tile")).to_have_count(2)
    panel = open_first(page)
    page.keyboard.press("4")
    expect(panel.get_by_role("radio", name="4 stars")).to_have_attribute("aria-checked", "true")
    wait_until(lambda: sidecar_rating(sidecar) == 4, "the sidecar written")
    wait_for_jobs(server)
    assert not (root / "IMG_0001.xmp").exists()  # never curated

    # Another program (Lightroom, say) rates it 2 in the sidecar; a rescan reads it.
    subprocess.run(
        ["exiftool", "-q", "-overwrite_original", "-XMP-xmp:Rating=2", str(sidecar)], check=True
    )
    with server.client() as http:
        answer = http.post("/api/jobs", json={"type": "import", "params": {"paths": [str(root)]}})
        assert answer.status_code in (200, 201), answer.text
    wait_for_jobs(server)
    page.reload()
    panel = open_first(page)
    expect(panel.get_by_role("radio", name="2 stars")).to_have_attribute("aria-checked", "true")
    expect(panel.locator(".xmp-status")).to_have_text("Read from its XMP sidecar (IMG_0000.xmp)")
    edited = sidecar.read_bytes()

    # Rated 5 here: a second XMP batch; undone from its job page.
    page.keyboard.press("5")
    expect(panel.get_by_role("radio", name="5 stars")).to_have_attribute("aria-checked", "true")
    wait_until(lambda: sidecar_rating(sidecar) == 5, "the sidecar written again")
    wait_for_jobs(server)
    second = xmp_jobs(server)[-1]
    assert second["state"] == JobState.SUCCEEDED
    page.keyboard.press("Escape")
    page.goto(f"{server.base_url}/jobs/{second['id']}")
    page.get_by_role("button", name=f"Undo xmp_write {second['id'][:8]}").click()
    expect(page.locator(".undo-link")).to_contain_text("xmp_write_undo")
    wait_until(lambda: sidecar.read_bytes() == edited, "the sidecar put back")
    wait_for_jobs(server)
    page.screenshot(path=shots / "xmp-undone.png")
    page.goto(f"{server.base_url}/library?order=oldest")
    panel = open_first(page)
    expect(panel.get_by_role("radio", name="2 stars")).to_have_attribute("aria-checked", "true")
    assert sidecar_rating(sidecar) == 2
    page.screenshot(path=shots / "xmp-viewer.png")
