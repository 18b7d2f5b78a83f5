"""The organize page in Chromium (#30): each planned file's date source, the undated
count, a scope of sources and days, and a template field that shows its underscores."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.factories import photos
from tests.support.api_server import running_server

# A folder to copy the plan's screenshot into for review, if set (it is always kept
# under test-output/e2e/).
REVIEW_SHOTS = os.environ.get("PHOTO_PIPELINE_REVIEW_SHOTS")


@pytest.fixture(scope="module")
def dated_server(tmp_path_factory):
    """A server over two sources: photos dated by the camera and by a file name, and
    two undated ones (no date but their mtime)."""
    require_chromium()
    root = tmp_path_factory.mktemp("dates")
    card, roll = root / "card", root / "roll"
    for n in range(3):
        photos.jpeg(card / f"IMG_000{n}.jpg", size=(64, 48), seed=n, taken=f"2023:07:1{n} 10:00:00")
    photos.jpeg(card / "20230716_101530.jpg", size=(64, 48), seed=5, taken=None)
    photos.jpeg(roll / "2019/IMG_0300.jpg", size=(64, 48), seed=6, taken=None)
    photos.jpeg(roll / "2019/IMG_0301.jpg", size=(64, 48), seed=7, taken=None)
    with running_server(
        f"sqlite:///{root / 'library.sqlite3'}", root / "home", embedded_workers=1
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [card, roll], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server, root


def test_the_plan_shows_date_sources_the_undated_count_and_takes_a_scope(page, dated_server, shots):
    from playwright.sync_api import expect

    server, root = dated_server
    sign_in(page, server, "/organize")
    page.get_by_label("Destination folder").fill(str(root / "organized"))
    rows = page.locator(".plan-table tbody tr")
    expect(rows).to_have_count(6)
    expect(page.locator(".undated-note")).to_contain_text("2 photos undated")
    expect(page.locator(".date-counts")).to_contain_text("3 camera")
    expect(page.locator(".date-counts")).to_contain_text("1 file name")
    undated = page.locator(".plan-table tbody tr[data-undated='true']")
    expect(undated).to_have_count(2)
    expect(undated.first.locator(".date-source")).to_contain_text("mtime")
    expect(undated.first.locator(".date-source .confidence-tag")).to_have_text("undated")
    expect(undated.first.locator(".destination")).to_have_text("undated/2019/IMG_0300.jpg")
    named = page.locator(".plan-table tbody tr", has_text="20230716_101530.jpg")
    expect(named.locator(".date-source")).to_contain_text("filename")
    page.screenshot(path=shots / "organize-plan.png", full_page=True)
    if REVIEW_SHOTS:
        Path(REVIEW_SHOTS).mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shots / "organize-plan.png", Path(REVIEW_SHOTS) / "organize-plan.png")

    # One source and a range of days: the preview follows.
    page.get_by_label("Sources").select_option(label=str(root / "card"))
    expect(rows).to_have_count(4)
    expect(page.locator(".undated-note")).to_have_count(0)
    page.get_by_label("Taken from").fill("2023-07-11")
    page.get_by_label("Taken until").fill("2023-07-12")
    expect(rows).to_have_count(2)
    page.screenshot(path=shots / "organize-plan-scoped.png", full_page=True)


def test_the_template_field_shows_its_underscores(page, dated_server, shots):
    """The default template's underscores were invisible in the field (clipped by
    Chromium in a fixed-height input): the field must look different with spaces."""
    from playwright.sync_api import expect

    server, _ = dated_server
    sign_in(page, server, "/organize")
    field = page.get_by_label("Template")
    expect(field).to_be_visible()
    template = "{taken:%Y%m%d_%H%M%S}_{original_name}.{ext}"
    field.fill(template)
    with_underscores = field.screenshot(path=shots / "template-underscores.png")
    field.fill(template.replace("_", " "))
    with_spaces = field.screenshot(path=shots / "template-spaces.png")
    assert with_underscores != with_spaces, "the field draws underscores as spaces"
