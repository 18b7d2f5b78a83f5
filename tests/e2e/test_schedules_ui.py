"""The Schedules page in a real headless Chromium against a real server whose
embedded worker ticks: add a schedule in the form, pause, resume and remove it, and
watch a due schedule's job run and its outcome appear as the last run."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import update

from photo_pipeline.db import write_session
from photo_pipeline.db.schema import schedules
from photo_pipeline.jobs.schedules.book import Schedules
from tests.e2e.conftest import require_chromium, sign_in
from tests.support import schedule_kinds
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(120)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def server(tmp_path):
    require_chromium()
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=1
    ) as server:
        yield server


def test_schedules_are_added_paused_resumed_and_removed(server, page, shots):
    sign_in(page, server)
    page.get_by_role("link", name="Schedules", exact=True).click()
    expect(page.get_by_role("heading", name="Schedules", exact=True)).to_be_visible()
    expect(page.get_by_text("No schedules")).to_be_visible()

    page.get_by_label("Job", exact=True).select_option("verify")
    page.get_by_label("Cron expression or interval").fill("0 4 * * 0")
    page.get_by_label("Time zone").fill("Europe/Paris")
    page.get_by_label("Params").fill("sample=25")
    page.get_by_role("button", name="Add schedule").click()
    row = page.locator("tr[data-job-type=verify]")
    expect(row).to_contain_text("0 4 * * 0")
    expect(row).to_contain_text("Europe/Paris")
    expect(row).to_contain_text("sample=25")
    expect(row.locator(".last-run")).to_have_text("never")
    page.screenshot(path=shots / "schedule-added.png")

    # A bad expression is refused in the form with its code; nothing is added.
    page.get_by_label("Cron expression or interval").fill("0 4 * *")
    page.get_by_role("button", name="Add schedule").click()
    expect(page.get_by_role("alert")).to_contain_text("invalid_cron")
    expect(page.locator("tr[data-schedule-id]")).to_have_count(1)

    row.get_by_role("button", name="Pause").click()
    expect(row.locator(".next-run")).to_have_text("paused")
    row.get_by_role("button", name="Resume").click()
    expect(row.locator(".next-run")).not_to_have_text("paused")
    [shown] = Schedules(server.library.service).list()
    assert shown["paused"] is False and shown["params"] == {"sample": 25}

    row.get_by_role("button", name="Remove").click()
    row.get_by_role("button", name="Confirm remove").click()
    expect(page.get_by_text("No schedules")).to_be_visible()
    assert Schedules(server.library.service).list() == []


def test_a_due_schedule_runs_and_its_outcome_shows(server, page, shots):
    book = Schedules(server.library.service)
    schedule = book.add(schedule_kinds.JOB_TYPE, every=timedelta(hours=1))
    sign_in(page, server, "/schedules")
    row = page.locator(f"tr[data-schedule-id='{schedule['id']}']")
    expect(row.locator(".last-run")).to_have_text("never")
    # Made an hour ago by the database's clock: the embedded worker's next check
    # queues the tick's job and runs it; the page follows the job as it goes.
    made = schedule["created_at"] - timedelta(hours=1, seconds=1)
    with write_session(server.library.sessions) as session:
        session.execute(
            update(schedules)
            .where(schedules.c.id == schedule["id"])
            .values(created_at=made, next_due=made + timedelta(hours=1))
        )
    expect(row.locator(".last-job [data-state]")).to_have_text("succeeded", timeout=30_000)
    expect(row.locator(".last-run")).not_to_have_text("never")
    expect(row.locator(".last-job a")).to_have_attribute(
        "href", f"/jobs/{book.list()[0]['last_job']['id']}"
    )
    page.screenshot(path=shots / "schedule-ran.png")


def test_the_schedules_page_fits_a_phone(server, browser, shots):
    Schedules(server.library.service).add("verify", {"sample": 25}, cron="0 4 * * 0")
    context = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True)
    try:
        page = context.new_page()
        sign_in(page, server, "/schedules")
        expect(page.locator("tr[data-job-type=verify]")).to_contain_text("0 4 * * 0")
        expect(page.get_by_role("button", name="Add schedule")).to_be_visible()
        # The table scrolls in its card; the page itself never scrolls sideways.
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
        page.screenshot(path=shots / "schedules-phone.png", full_page=True)
    finally:
        context.close()
