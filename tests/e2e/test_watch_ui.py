"""The import form's "Watch this folder": the folder imported is watched from then on,
and the box is cleared for the next import."""

from __future__ import annotations

import re

import pytest

from photo_pipeline.pipeline.ingest.sources import list_sources
from photo_pipeline.sample import write_sample
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.support.api_server import running_server

pytestmark = pytest.mark.timeout(120)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def server(tmp_path):
    require_chromium()
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}", tmp_path / "home", embedded_workers=2
    ) as server:
        yield server


def test_the_import_form_can_watch_the_folder(server, page, tmp_path):
    watched, plain = tmp_path / "phone", tmp_path / "card"
    write_sample(watched, 2)
    write_sample(plain, 2)
    sign_in(page, server)
    page.get_by_label("Folder path on the server").fill(str(watched))
    page.get_by_label("Watch this folder").check()
    page.get_by_role("button", name="Start import").click()
    # The sample holds a damaged photo: "succeeded · 1 problem".
    expect(page.locator("tr[data-job-type='scan'] .badge")).to_have_text(re.compile("^succeeded"))
    expect(page.get_by_label("Watch this folder")).not_to_be_checked()
    wait_for_jobs(server)
    page.get_by_label("Folder path on the server").fill(str(plain))
    page.get_by_role("button", name="Start import").click()
    expect(page.locator("tr[data-job-type='scan']")).to_have_count(2)
    wait_for_jobs(server)
    watch = {row["path"]: row["watch"] for row in list_sources(server.library.service)}
    assert watch == {str(watched.resolve()): True, str(plain.resolve()): False}
