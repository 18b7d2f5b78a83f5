"""The People page in a real Chromium: a person's face crop on the page, opened, named
by the prompt, one face taken out; the photos of the person in the order taken."""

from __future__ import annotations

import shutil

import pytest

from photo_pipeline.pipeline.ingest.imports import import_folders
from tests.e2e.conftest import require_chromium, sign_in, wait_for_jobs
from tests.support.api_server import running_server
from tests.support.face_photos import OBAMA

pytestmark = pytest.mark.timeout(180)


def expect(locator):
    from playwright.sync_api import expect as playwright_expect

    return playwright_expect(locator)


@pytest.fixture
def people_server(tmp_path, face_images):
    require_chromium()
    root = tmp_path / "photos"
    root.mkdir()
    for name in [*OBAMA[:3], "biden.jpg"]:
        shutil.copy(face_images / name, root / name)
    with running_server(
        f"sqlite:///{tmp_path / 'library.sqlite3'}",
        tmp_path / "home",
        embedded_workers=2,
        faces="on",
    ) as server:
        lib = server.library
        import_folders(lib.service, lib.catalog, [root], follow_up=lib.settings)
        wait_for_jobs(server)
        yield server


def test_a_person_is_shown_named_and_a_face_taken_out(people_server, page, shots):
    sign_in(page, people_server, "/people")
    card = page.locator(".person-card")
    expect(card).to_have_count(1)
    expect(card).to_contain_text("Unnamed")
    expect(card).to_contain_text("3 photos")
    crop = card.locator("img.face-crop")
    expect(crop).to_have_js_property("complete", True)
    assert crop.evaluate("img => img.naturalWidth") > 0
    page.screenshot(path=shots / "people.png")

    card.get_by_role("link").click()
    expect(page.locator(".person-face")).to_have_count(3)
    expect(page.locator(".album-photos .album-photo")).to_have_count(3)
    page.once("dialog", lambda dialog: dialog.accept("Barack Obama"))
    page.get_by_role("button", name="Name", exact=True).click()
    expect(page.get_by_role("heading", name="Barack Obama")).to_be_visible()
    page.locator(".person-face").nth(2).get_by_role("button", name="Not them").click()
    expect(page.locator(".person-face")).to_have_count(2)
    expect(page.locator(".album-photos .album-photo")).to_have_count(2)
    page.screenshot(path=shots / "person.png")

    page.get_by_role("link", name="People", exact=True).click()
    expect(page.locator(".person-card")).to_contain_text("Barack Obama")


def test_a_face_is_moved_to_a_named_person(people_server, page):
    from sqlalchemy import select

    from photo_pipeline.db import read_session
    from photo_pipeline.db.schema import faces
    from photo_pipeline.pipeline.faces import people as decide

    sessions = people_server.library.sessions
    with read_session(sessions) as session:
        (waiting,) = session.scalars(select(faces.c.id).where(faces.c.person_id.is_(None)))
    biden = decide.move_faces(sessions, [waiting], None)["id"]  # a person of their own
    decide.name_person(sessions, biden, "Joe Biden")

    sign_in(page, people_server, "/people")
    page.locator(".person-card", has_text="Unnamed").get_by_role("link").click()
    expect(page.locator(".person-face")).to_have_count(3)
    first = page.locator(".person-face").first
    moved = first.get_attribute("data-face-id")

    page.once("dialog", lambda dialog: dialog.accept("Nobody Here"))
    first.get_by_role("button", name="Move to…").click()
    expect(page.locator(".banner.error[data-code=person_not_found]")).to_contain_text(
        "no person named Nobody Here"
    )
    expect(page.locator(".person-face")).to_have_count(3)

    page.once("dialog", lambda dialog: dialog.accept("joe biden"))
    first.get_by_role("button", name="Move to…").click()
    expect(page.locator(".person-face")).to_have_count(2)
    expect(page.locator(f".person-face[data-face-id='{moved}']")).to_have_count(0)

    page.get_by_role("link", name="← All people").click()
    page.locator(".person-card", has_text="Joe Biden").get_by_role("link").click()
    expect(page.get_by_role("heading", name="Joe Biden")).to_be_visible()
    expect(page.locator(".person-face")).to_have_count(2)
    expect(page.locator(f".person-face[data-face-id='{moved}']")).to_have_count(1)
    with read_session(sessions) as session:
        row = session.execute(select(faces).where(faces.c.id == int(moved))).one()
    assert row.person_id == biden and row.assigned == "user"
