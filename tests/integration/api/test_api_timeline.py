"""GET /api/timeline over a real server on both databases: the capture days with their
counts equal the listing's, newest first (or oldest); the triggers keep the summary
right through a changed date, a Live Photo's pairing and a removal; filters and search
words count the matching assets; bad input is a 4xx problem; the listing's
``sort=taken-desc`` pages the timeline's order; and migration 0029 counts the assets
there are."""

from __future__ import annotations

from collections import Counter

import pytest
from sqlalchemy import delete, select, text, update

from photo_pipeline.db import create_database_engine
from photo_pipeline.db.migrate import upgrade
from photo_pipeline.db.schema import assets, files, timeline_days
from photo_pipeline.pipeline import search_index
from tests.support.api_server import running_server
from tests.support.catalogue_rows import add_assets

ASSETS = 120


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        # Captures a day apart (catalogue_rows): a few on one day besides, for the counts.
        add_assets(server.library.sessions, list(range(ASSETS)))
        with server.library.sessions.begin() as session:
            session.execute(
                update(assets)
                .where(assets.c.id.between(10, 14))
                .values(taken_local="2015-01-05T08:30:00")
            )
            # Places for the place filter (its summary): a city, and a region only.
            session.execute(
                update(assets)
                .where(assets.c.id.between(8, 30))
                .values(city="Paris", country="France", country_code="FR")
            )
            session.execute(
                update(assets).where(assets.c.id.between(60, 70)).values(region="Bavaria")
            )
        yield server


def listed(http, **params) -> list[dict]:
    found, cursor = [], None
    while True:
        page = http.get(
            "/api/assets", params={**params, "limit": 500, **({"cursor": cursor} if cursor else {})}
        )
        assert page.status_code == 200, page.text
        found += page.json()["assets"]
        cursor = page.json()["next_cursor"]
        if cursor is None:
            return found


def days_of(found: list[dict]) -> Counter[str]:
    return Counter(a["taken_local"][:10] for a in found)


def timeline(http, **params) -> dict:
    answer = http.get("/api/timeline", params=params)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_the_days_and_their_counts_are_the_listings(api):
    with api.client() as http:
        body = timeline(http)
        expected = days_of(listed(http))
        assert body["from_summary"] is True
        assert {d["day"]: d["count"] for d in body["days"]} == expected
        assert body["total"] == ASSETS
        assert [d["day"] for d in body["days"]] == sorted(expected, reverse=True)
        assert dict(Counter({d["day"]: d["count"] for d in body["days"]}))["2015-01-05"] == 6
        oldest = timeline(http, order="oldest")
        assert [d["day"] for d in oldest["days"]] == sorted(expected)


def test_the_triggers_follow_dates_pairings_and_removals(api):
    sessions = api.library.sessions
    with sessions.begin() as session:
        session.execute(
            update(assets).where(assets.c.id == 50).values(taken_local="2030-02-03T10:00:00")
        )
        # A Live Photo's motion half is shown by its still: it leaves the counts.
        session.execute(update(assets).where(assets.c.id == 51).values(live_of=52))
        session.execute(delete(files).where(files.c.asset_id == 60))
        session.execute(delete(assets).where(assets.c.id == 60))
    with api.client() as http:
        body = timeline(http)
        counts = {d["day"]: d["count"] for d in body["days"]}
        assert counts == days_of(listed(http))
        assert counts["2030-02-03"] == 1
        assert body["days"][0] == {"day": "2030-02-03", "count": 1}
        assert body["total"] == ASSETS - 2
    with sessions.begin() as session:
        session.execute(update(assets).where(assets.c.id == 51).values(live_of=None))
        session.execute(
            update(assets).where(assets.c.id == 50).values(taken_local="2015-02-20T10:00:00")
        )
        summary = dict(session.execute(select(timeline_days.c.day, timeline_days.c.count)).all())
    assert "2030-02-03" not in summary, "an emptied day leaves the summary"
    with api.client() as http:
        assert {d["day"]: d["count"] for d in timeline(http)["days"]} == days_of(listed(http))


@pytest.mark.parametrize(
    ("params", "from_summary"),
    [
        ({"camera": "canon"}, True),
        ({"camera": "ANON"}, True),
        ({"taken_from": "2015-02-01", "taken_to": "2015-03-15"}, True),
        ({"camera": "canon", "taken_from": "2015-01-05", "taken_to": "2015-03-15"}, True),
        ({"place": "paris"}, True),
        ({"place": "fr"}, True),
        ({"place": "bav", "order": "oldest"}, True),
        ({"place": "paris", "camera": "canon"}, False),
        ({"camera": "canon", "type": "photo"}, False),
        ({"favorite": "false", "type": "photo"}, False),
    ],
)
def test_filters_count_the_matching_assets(api, params, from_summary):
    with api.client() as http:
        body = timeline(http, **params)
        expected = days_of(listed(http, **{k: v for k, v in params.items() if k != "order"}))
        assert expected, params
        assert body["from_summary"] is from_summary
        newest_first = params.get("order") != "oldest"
        assert [d["day"] for d in body["days"]] == sorted(expected, reverse=newest_first)
        assert {d["day"]: d["count"] for d in body["days"]} == expected
        assert body["total"] == sum(expected.values())


def test_search_words_count_what_the_search_finds(api):
    with api.client() as http:
        found = http.get("/api/search", params={"q": "february 2015", "limit": 500}).json()
        body = timeline(http, q="february 2015")
    # Date words are a range of days: read from the summary.
    assert found["assets"] and body["from_summary"] is True
    assert {d["day"]: d["count"] for d in body["days"]} == days_of(found["assets"])
    with api.library.sessions.begin() as session:
        search_index.rebuild(session)  # the rows were written without their documents
    with api.client() as http:
        found = http.get("/api/search", params={"q": "canon", "limit": 500}).json()
        body = timeline(http, q="canon")
    assert found["assets"] and body["from_summary"] is False  # words: counted
    assert {d["day"]: d["count"] for d in body["days"]} == days_of(found["assets"])


def test_search_words_and_curation_filters_narrow_each_other(api):
    with api.client() as http:
        marked = http.post("/api/curation", json={"ids": [40, 41, 60], "action": "favorite"})
        assert marked.status_code == 200, marked.text
        params = {"q": "february 2015", "favorite": "true"}
        found = http.get("/api/search", params={**params, "limit": 500}).json()["assets"]
        body = timeline(http, **params)
    assert sorted(a["id"] for a in found) == [40, 41]  # 60 is in March
    assert {d["day"]: d["count"] for d in body["days"]} == days_of(found)


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"order": "sideways"}, 422, "invalid_request"),
        ({"taken_from": "2020-13-45"}, 422, "invalid_request"),
        ({"taken_to": "yesterday"}, 422, "invalid_request"),
        ({"album": "999"}, 404, "album_not_found"),
        ({"rating": "seven"}, 422, "invalid_rating"),
        ({"q": "photo video"}, 422, "invalid_search"),
        ({"person": "999"}, 404, "person_not_found"),
    ],
)
def test_bad_input_is_a_problem(api, params, status, code):
    with api.client() as http:
        answer = http.get("/api/timeline", params=params)
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert answer.json()["code"] == code


@pytest.mark.parametrize("path", ["/api/assets", "/api/search", "/api/timeline"])
def test_every_listing_takes_the_same_filters(api, path):
    """One set of filters for the three (api.listing_filters): a person no listing
    knows is refused by each, not ignored by some."""
    with api.client() as http:
        answer = http.get(path, params={"q": "2015", "person": "999", "type": "photo"})
    assert answer.status_code == 404, answer.text
    assert answer.json()["code"] == "person_not_found"


def test_the_listing_pages_newest_first(api):
    with api.client() as http:
        pages, cursor = [], None
        while True:
            params = {"sort": "taken-desc", "limit": 7, **({"cursor": cursor} if cursor else {})}
            page = http.get("/api/assets", params=params).json()
            pages += page["assets"]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        keys = [(a["taken_local"], a["id"]) for a in pages]
        assert keys == sorted(keys, reverse=True) and len(keys) == ASSETS
        # A day's assets, as the timeline loads a bucket: a date range in that order.
        day = http.get(
            "/api/assets",
            params={"sort": "taken-desc", "taken_from": "2015-01-05", "taken_to": "2015-01-05"},
        ).json()["assets"]
        assert [a["id"] for a in day] == [14, 13, 12, 11, 10, 4]
        refused = http.get("/api/assets", params={"sort": "taken", "cursor": cursor or "x"})
        assert refused.status_code == 422


def test_the_migration_counts_the_assets_there_are(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine, "0028")
    row = {
        "size": 1,
        "format": "jpeg",
        "mime": "image/jpeg",
        "width": 1,
        "height": 1,
        "orientation": 1,
        "taken_source": "exif_original",
        "created_at": 0,
        "updated_at": 0,
    }
    taken = ["2020-01-01T10:00:00", "2020-01-01T23:59:59", "2021-06-30T00:00:00"]

    def add(conn, n: int, local: str) -> None:
        values = {**row, "content_hash": f"{n:064x}", "taken_local": local}
        names, marks = ", ".join(values), ", ".join(f":{k}" for k in values)
        conn.execute(text(f"INSERT INTO assets ({names}) VALUES ({marks})"), values)

    with engine.begin() as conn:
        for n, local in enumerate(taken):
            add(conn, n, local)
    upgrade(engine)
    with engine.begin() as conn:
        counted = dict(conn.execute(select(timeline_days.c.day, timeline_days.c.count)).all())
        assert counted == {"2020-01-01": 2, "2021-06-30": 1}
        add(conn, 99, taken[2])  # and the triggers count from here on
        counted = dict(conn.execute(select(timeline_days.c.day, timeline_days.c.count)).all())
    assert counted == {"2020-01-01": 2, "2021-06-30": 2}
    engine.dispose()
