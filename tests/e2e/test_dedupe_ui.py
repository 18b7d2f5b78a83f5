"""The dedupe plan on the duplicates page, "Apply" followed live, and undo from the
job's page, in a real Chromium against a real server (#16)."""

from __future__ import annotations

import re

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.sample import write_sample
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.support.api_server import running_server
from tests.support.cli_processes import wait_until
from tests.support.dedupe_library import sha256_tree

pytestmark = pytest.mark.timeout(120)
PHOTOS = 6  # write_sample adds exact copies of the first two in copies/


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def sample_server(tmp_path):
    """Its own server: the test moves files, which other tests' library must not see."""
    require_chromium()
    photos = tmp_path / "photos"
    write_sample(photos, PHOTOS)
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [photos], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server, photos


def test_apply_runs_the_plan_live_and_the_job_page_undoes_it(sample_server, page, shots):
    server, photos = sample_server
    before = sha256_tree(photos)
    sign_in(page, server, "/duplicates")
    plan = page.locator(".dedupe-plan")
    expect(plan.locator(".plan-summary")).to_contain_text("2 files to quarantine")
    groups = plan.locator("article.dedupe-group")
    expect(groups).to_have_count(2)
    # Each keeper says why it won; the copy in copies/ is what moves.
    expect(groups.first.locator(".why")).to_contain_text("because")
    expect(groups.first.locator(".dedupe-moves")).to_contain_text("copies/")
    # The exact groups below preselect the same keeper.
    page.get_by_role("button", name=re.compile("^Exact")).click()
    keeper = page.locator("article.dup-group.exact .choice.keeper").first
    expect(keeper.locator("input")).to_be_checked()
    expect(keeper).not_to_contain_text("copies/")
    page.screenshot(path=shots / "dedupe-plan.png", full_page=True)

    page.get_by_role("button", name="Apply").click()
    following = page.locator(".dedupe-running .following")
    expect(following).to_be_visible()
    expect(following.locator("[data-state]").first).to_have_text("succeeded")
    expect(following.locator(".progress-label")).to_contain_text("2 / 2")
    expect(plan.locator(".plan-summary")).to_contain_text("Nothing to reclaim")
    expect(page.locator("article.dup-group.exact")).to_have_count(0)
    assert not (photos / "copies").exists() or not list((photos / "copies").iterdir())
    page.screenshot(path=shots / "dedupe-applied.png", full_page=True)

    following.get_by_role("link", name=re.compile("^dedupe ")).click()
    expect(page.locator(".page-actions")).to_contain_text("succeeded")
    page.get_by_role("button", name=re.compile("^Undo dedupe")).click()
    undo_link = page.get_by_role("link", name=re.compile("^Undo: dedupe_undo"))
    expect(undo_link).to_be_visible()
    page.screenshot(path=shots / "dedupe-job-undo.png", full_page=True)
    undo_link.click()
    expect(page.locator(".page-actions [data-state]").first).to_have_text("succeeded")
    wait_until(lambda: sha256_tree(photos) == before, "the copies back in place")


def test_the_duplicates_page_follows_the_cursor_past_the_first_page(sample_server, page):
    server, _ = sample_server
    # One group per page, so that the sample's two exact groups need "Show more"
    # (the page asks for 100 at a time; the server's own paging does the rest).
    page.route(
        re.compile(r".*/api/duplicates\?.*"),
        lambda route: route.continue_(url=route.request.url.replace("limit=100", "limit=1")),
    )
    sign_in(page, server, "/duplicates")
    page.get_by_role("button", name=re.compile("^Exact")).click()
    groups = page.locator("article.dup-group.exact")
    expect(groups).to_have_count(1)
    expect(page.locator("#exact-title .count-pill")).to_have_text("1+")
    more = page.locator(".dup-section:not(.near) .show-more")
    more.click()
    expect(groups).to_have_count(2)
    expect(page.locator("#exact-title .count-pill")).to_have_text("2")
    expect(more).to_be_hidden()
    assert len(set(groups.evaluate_all("cards => cards.map(c => c.dataset.group)"))) == 2


def test_the_plan_says_which_near_groups_wait_and_takes_a_scope(sample_server, page, shots):
    """#30: with near duplicates asked for, the plan says how many near groups wait
    for a decision (the sample's two have none); a scope of days limits the plan."""
    server, _ = sample_server
    sign_in(page, server, "/duplicates")
    plan = page.locator(".dedupe-plan")
    expect(plan.locator("article.dedupe-group")).to_have_count(2)
    expect(plan.locator(".near-waiting")).to_be_hidden()
    plan.get_by_label("Near duplicates I chose keepers for").check()
    expect(plan.locator(".near-waiting")).to_contain_text(
        "2 near-duplicate groups wait for your decision"
    )
    page.screenshot(path=shots / "dedupe-near-waiting.png", full_page=True)
    # No photo of the sample was taken on this day: nothing to reclaim there.
    plan.get_by_label("Taken from").fill("2001-01-01")
    plan.get_by_label("Taken until").fill("2001-01-02")
    expect(plan.locator(".plan-summary")).to_have_text("Nothing to reclaim: no copy to move.")
    expect(plan.locator("article.dedupe-group")).to_have_count(0)
