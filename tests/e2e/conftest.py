"""Browser tests of the web UI: a real server (SQLite, embedded worker) and Debian's
Chromium driven by Playwright. Playwright never downloads a browser here."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from photo_pipeline.jobs.states import FINISHED_STATES
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.sample import write_sample
from tests.support import api_job_types  # noqa: F401  (registers "test.record")
from tests.support.api_server import TOKEN, ApiServer, running_server
from tests.support.cli_processes import wait_until
from tests.support.face_photos import face_images  # noqa: F401  (a fixture: test_people_ui)

CHROMIUM = Path(os.environ.get("PHOTO_PIPELINE_CHROMIUM", "/usr/bin/chromium"))
REPO = Path(__file__).resolve().parents[2]
SHOTS = REPO / "test-output" / "e2e"  # git-ignored; look at them after a run
SAMPLE_PHOTOS = 24  # write_sample adds 2 near-duplicate edits: 26 assets


def _chromium_error() -> str | None:
    if not CHROMIUM.exists():
        return f"{CHROMIUM} not found (apt-get install chromium; `make test` does as root)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the playwright package is missing (pip install -e '.[dev]')"
    return None


def require_chromium() -> None:
    """Skip (or, under CI=true, fail) when the browser or Playwright is missing."""
    error = _chromium_error()
    if error is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"{error}; CI requires it", pytrace=False)
    pytest.skip(error)


# Per module, not per session: Playwright's sync API keeps an event loop running in
# the main thread while it is open, which later tests' asyncio.run() would trip on.
@pytest.fixture(scope="module")
def browser():
    require_chromium()
    from playwright.sync_api import expect, sync_playwright

    # An assertion waits up to 30 s, not Playwright's 5: under the parallel suite on two
    # cores, hashing and sending a 19 MB upload took longer than 5 s (a wait for a state,
    # not a timing assert: a pass is as quick as before).
    expect.set_options(timeout=30_000)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=["--no-sandbox", "--disable-dev-shm-usage"]
        )
        yield browser
        browser.close()


class Failures:
    """Uncaught script errors and CSP violations seen by a page: a test fails on them."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def console(self, message) -> None:
        if message.type == "error" and "Content Security Policy" in message.text:
            self.seen.append(f"CSP: {message.text}")

    def page_error(self, error) -> None:
        self.seen.append(f"uncaught: {error}")


@pytest.fixture
def page(browser, request):
    context = browser.new_context(viewport={"width": 1360, "height": 900})
    context.set_default_timeout(20_000)
    page = context.new_page()
    failures = Failures()
    page.on("console", failures.console)
    page.on("pageerror", failures.page_error)
    yield page
    context.close()
    assert not failures.seen, failures.seen


@pytest.fixture
def shots(request) -> Iterator[Path]:
    """Where a test saves its screenshots: test-output/e2e/<test name>/."""
    folder = SHOTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.png"):
        old.unlink()
    yield folder


def wait_for_jobs(server: ApiServer) -> None:
    service = server.library.service
    wait_until(
        lambda: all(job["state"] in FINISHED_STATES for job in service.list_jobs(limit=500)),
        "every job to finish",
    )


@pytest.fixture(scope="module")
def library_server(tmp_path_factory) -> Iterator[tuple[ApiServer, Path]]:
    """A server over an imported sample library (scanned, rendered, near duplicates
    found), and the folder of its photos."""
    require_chromium()  # no point in importing photos for tests that will skip
    root = tmp_path_factory.mktemp("library")
    photos = root / "photos"
    write_sample(photos, SAMPLE_PHOTOS)
    with running_server(
        f"sqlite:///{root / 'library.sqlite3'}", root / "home", embedded_workers=2
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [photos], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server, photos


def sign_in(page, server: ApiServer, path: str = "/jobs") -> None:
    from playwright.sync_api import expect

    page.goto(server.base_url + path)
    page.get_by_label("API token").fill(TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("[data-live]")).to_have_text("Live")
