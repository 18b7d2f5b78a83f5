"""The curation API over a real server, on both databases: one asset's favourite,
rating, reject flag and tags; batch actions on many; tags; albums CRUD with cover and
date range; the /api/assets filters and fields, paged by keyset; problem+json for bad
input; and the outbox an XMP writer reads (only real changes bump a version)."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline.curation import mark_written, pending_changes
from tests.integration.api.test_api_library import all_pages, import_sample


@pytest.fixture
def api(db_url, tmp_path):
    from tests.support.api_server import running_server

    with running_server(db_url, tmp_path / "home") as server:
        import_sample(server, tmp_path / "photos")
        yield server


def ids_of(http) -> list[int]:
    return [a["id"] for a in all_pages(http, sort="taken", limit=100)]


def problem_of(answer, status: int, code: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == code, answer.json()


def test_one_asset_marks_are_idempotent(api):
    with api.client() as http:
        first = ids_of(http)[0]
        assert http.put(f"/api/assets/{first}/rating", json={"rating": 4}).json() == {
            "changed": [first], "unchanged": []
        }  # fmt: skip
        assert http.put(f"/api/assets/{first}/rating", json={"rating": 4}).json() == {
            "changed": [], "unchanged": [first]
        }  # fmt: skip
        assert http.put(f"/api/assets/{first}/favorite").json()["changed"] == [first]
        assert http.put(f"/api/assets/{first}/favorite").json()["unchanged"] == [first]
        assert http.put(f"/api/assets/{first}/rejected").json()["changed"] == [first]
        assert http.post(f"/api/assets/{first}/tags", json={"tag": "Places|France"}).json()[
            "changed"
        ] == [first]
        assert http.post(f"/api/assets/{first}/tags", json={"tag": "places|FRANCE"}).json()[
            "unchanged"
        ] == [first]
        detail = http.get(f"/api/assets/{first}").json()
        assert (detail["rating"], detail["favorite"], detail["rejected"]) == (4, True, True)
        assert detail["tags"] == ["Places|France"] and detail["albums"] == []
        for part in ("rating", "favorite", "rejected", "tags"):
            marks = http.get(f"/api/assets/{first}/{part}").json()
            assert marks == {"asset_id": first, "rating": 4, "favorite": True,
                             "rejected": True, "tags": ["Places|France"], "albums": []}  # fmt: skip
        problem_of(http.get("/api/assets/4000000/rating"), 404, "asset_not_found")
        assert http.get(f"/api/assets/{first}/thumbnail").status_code == 200  # still served

        assert http.delete(f"/api/assets/{first}/favorite").json()["changed"] == [first]
        assert http.delete(f"/api/assets/{first}/favorite").json()["unchanged"] == [first]
        assert http.delete(f"/api/assets/{first}/rejected").json()["changed"] == [first]
        gone = http.delete(f"/api/assets/{first}/tags", params={"tag": "PLACES|france"})
        assert gone.json()["changed"] == [first]
        detail = http.get(f"/api/assets/{first}").json()
        assert (detail["favorite"], detail["rejected"], detail["tags"]) == (False, False, [])
        assert http.get("/api/tags").json() == []


def test_bad_input_is_a_problem(api):
    with api.client() as http:
        first = ids_of(http)[0]
        problem_of(http.put(f"/api/assets/{first}/rating", json={"rating": 6}), 422,
                   "invalid_request")  # fmt: skip
        problem_of(http.put("/api/assets/4000000/rating", json={"rating": 2}), 404,
                   "asset_not_found")  # fmt: skip
        problem_of(http.put("/api/assets/4000000/favorite"), 404, "asset_not_found")
        problem_of(http.post(f"/api/assets/{first}/tags", json={"tag": "a||b"}), 422,
                   "invalid_tag")  # fmt: skip
        problem_of(http.delete(f"/api/assets/{first}/tags", params={"tag": "never"}), 404,
                   "tag_not_found")  # fmt: skip
        problem_of(http.post("/api/curation", json={"ids": [first], "action": "rate"}), 422,
                   "invalid_rating")  # fmt: skip
        problem_of(http.post("/api/curation", json={"ids": [first], "action": "tag"}), 422,
                   "invalid_tag")  # fmt: skip
        to_album = {"ids": [first], "action": "add_to_album", "album": 77}
        problem_of(http.post("/api/curation", json=to_album), 404, "album_not_found")
        unknown = {"ids": [first, 4000000], "action": "favorite"}
        problem_of(http.post("/api/curation", json=unknown), 404, "asset_not_found")
        assert http.get(f"/api/assets/{first}").json()["favorite"] is False  # all or nothing
        problem_of(http.get("/api/assets", params={"rating": ">5"}), 422, "invalid_rating")
        problem_of(http.get("/api/assets", params={"rating": "x"}), 422, "invalid_rating")
        problem_of(http.get("/api/assets", params={"tag": "|"}), 422, "invalid_tag")
        problem_of(http.get("/api/assets", params={"album": 77}), 404, "album_not_found")
        problem_of(http.post("/api/albums", json={"name": "  "}), 422, "invalid_album_name")
        problem_of(http.get("/api/albums/77"), 404, "album_not_found")
        problem_of(http.delete("/api/albums/77"), 404, "album_not_found")


def test_batch_actions_and_filters_page_by_keyset(api):
    with api.client() as http:
        every = ids_of(http)
        chosen, others = every[:5], every[5:]
        rate = http.post("/api/curation", json={"ids": chosen, "action": "rate", "rating": 5})
        assert rate.json() == {"changed": chosen, "unchanged": []}
        again = http.post("/api/curation", json={"ids": chosen, "action": "rate", "rating": 5})
        assert again.json() == {"changed": [], "unchanged": chosen}
        http.post("/api/curation", json={"ids": chosen[:2], "action": "rate", "rating": 3})
        http.post("/api/curation", json={"ids": chosen[1:4], "action": "favorite"})
        http.post("/api/curation", json={"ids": [others[0]], "action": "reject"})
        tag = {"action": "tag", "tag": "Places|France|Paris"}
        http.post("/api/curation", json={"ids": chosen[:3], **tag})
        http.post("/api/curation", json={"ids": [others[1]], "action": "tag",
                                         "tag": "Places|Germany"})  # fmt: skip

        def found(**params) -> list[int]:
            listed = []
            for sort in ("taken", "taken-utc", "added"):
                paged = [a["id"] for a in all_pages(http, sort=sort, limit=1, **params)]
                assert paged == [a["id"] for a in all_pages(http, sort=sort, **params)]
                listed.append(sorted(paged))
            assert listed[0] == listed[1] == listed[2]
            return listed[0]

        assert found(rating="5") == sorted(chosen[2:])
        assert found(rating=">=3") == sorted(chosen)
        assert found(rating="<3") == sorted(others)
        assert found(rating="3-4") == sorted(chosen[:2])
        assert found(favorite="true") == sorted(chosen[1:4])
        assert found(favorite="false") == sorted(set(every) - set(chosen[1:4]))
        assert found(rejected="true") == [others[0]]
        assert found(tag="places") == sorted([*chosen[:3], others[1]])
        assert found(tag="Places|France") == sorted(chosen[:3])
        assert found(tag="Places|France", favorite="true", rating="5") == [chosen[2]]

        page = http.get("/api/assets", params={"tag": "places|france"}).json()
        assert page["total"] == 3 and page["total_exact"] is True
        row = next(a for a in page["assets"] if a["id"] == chosen[1])
        assert (row["rating"], row["favorite"], row["rejected"]) == (3, True, False)
        assert row["tags"] == ["Places|France|Paris"] and row["albums"] == []

        tags = {t["path"]: t for t in http.get("/api/tags").json()}
        assert tags["Places|France|Paris"]["count"] == 3
        assert tags["Places|France|Paris"]["parent"] == "Places|France"

        def act(action: str, ids: list[int], **extra) -> dict:
            answer = http.post("/api/curation", json={"ids": ids, "action": action, **extra})
            assert answer.status_code == 200, answer.text
            return answer.json()

        assert act("unfavorite", chosen[:2]) == {"changed": [chosen[1]], "unchanged": [chosen[0]]}
        assert act("unreject", [others[0], others[1]])["changed"] == [others[0]]
        assert act("untag", chosen[:3], tag="PLACES|france|paris")["changed"] == chosen[:3]
        assert act("untag", chosen[:3], tag="Places|France|Paris")["unchanged"] == chosen[:3]
        assert found(favorite="true") == sorted(chosen[2:4])
        assert found(rejected="true") == [] and found(tag="Places|France") == []
        assert [t["path"] for t in http.get("/api/tags").json()] == ["Places|Germany"]


def test_albums_crud_with_cover_and_date_range(api):
    with api.client() as http:
        every = all_pages(http, sort="taken")
        made = http.post("/api/albums", json={"name": "Holiday"})
        assert made.status_code == 201
        album = made.json()
        assert (album["count"], album["cover_asset_id"], album["taken_from"]) == (0, None, None)
        same = http.post("/api/albums", json={"name": "HOLIDAY"})
        assert same.status_code == 200 and same.json()["id"] == album["id"]
        aid = album["id"]

        # Added out of date order: the range is the earliest and latest taken.
        picked = [every[4], every[1], every[7]]
        first = http.post(f"/api/albums/{aid}/assets", json={"ids": [picked[0]["id"]]}).json()
        assert first["changed"] == [picked[0]["id"]] and first["album"]["count"] == 1
        rest = http.post(f"/api/albums/{aid}/assets", json={"ids": [p["id"] for p in picked]})
        assert rest.json()["unchanged"] == [picked[0]["id"]]
        shown = http.get(f"/api/albums/{aid}").json()
        assert shown["count"] == 3
        assert shown["taken_from"] == min(p["taken_local"] for p in picked)
        assert shown["taken_to"] == max(p["taken_local"] for p in picked)
        assert shown["cover_asset_id"] == picked[0]["id"] and shown["cover_chosen"] is False
        assert shown["cover_url"] and http.get(shown["cover_url"]).status_code == 200
        assert sorted(a["id"] for a in all_pages(http, album=aid)) == sorted(
            p["id"] for p in picked
        )
        detail = http.get(f"/api/assets/{picked[1]['id']}").json()
        assert detail["albums"] == [{"id": aid, "name": "Holiday"}]

        chosen = http.patch(f"/api/albums/{aid}", json={"cover_asset_id": picked[2]["id"]})
        assert chosen.json()["cover_asset_id"] == picked[2]["id"]
        problem_of(http.patch(f"/api/albums/{aid}", json={"cover_asset_id": every[0]["id"]}),
                   422, "asset_not_in_album")  # fmt: skip
        other = http.post("/api/albums", json={"name": "Other"}).json()
        problem_of(http.patch(f"/api/albums/{other['id']}", json={"name": "holiday"}), 409,
                   "album_exists")  # fmt: skip
        renamed = http.patch(f"/api/albums/{aid}", json={"name": "Summer"}).json()
        assert renamed["name"] == "Summer"
        assert [a["name"] for a in http.get("/api/albums").json()] == ["Other", "Summer"]

        out = http.delete(f"/api/albums/{aid}/assets/{picked[2]['id']}").json()
        assert out["changed"] == [picked[2]["id"]]
        assert out["album"]["cover_asset_id"] == picked[0]["id"]  # the chosen cover left
        again = http.delete(f"/api/albums/{aid}/assets/{picked[2]['id']}").json()
        assert again["unchanged"] == [picked[2]["id"]]
        batch = {"ids": [picked[1]["id"]], "action": "remove_from_album", "album": aid}
        assert http.post("/api/curation", json=batch).json()["changed"] == [picked[1]["id"]]

        assert http.delete(f"/api/albums/{aid}").json()["name"] == "Summer"
        assert [a["name"] for a in http.get("/api/albums").json()] == ["Other"]
        assert len(all_pages(http)) == len(every)  # the photos stay
        problem_of(http.get("/api/assets", params={"album": aid}), 404, "album_not_found")


def test_the_outbox_lists_real_changes_once_per_version(api):
    sessions = api.library.sessions
    with api.client() as http:
        a, b = ids_of(http)[:2]
        http.put(f"/api/assets/{a}/rating", json={"rating": 2})
        http.put(f"/api/assets/{a}/rating", json={"rating": 2})  # no change: no version
        http.put(f"/api/assets/{b}/favorite")
        pending = {p["asset_id"]: p["version"] for p in pending_changes(sessions)}
        assert pending == {a: 1, b: 1}
        # A change made after the writer read version 1 stays pending.
        http.post(f"/api/assets/{a}/tags", json={"tag": "x"})
        assert mark_written(sessions, pending) == 1
        assert {p["asset_id"]: p["version"] for p in pending_changes(sessions)} == {a: 2}
        assert mark_written(sessions, {a: 2}) == 1
        assert pending_changes(sessions) == []
        album = http.post("/api/albums", json={"name": "A"}).json()
        http.post(f"/api/albums/{album['id']}/assets", json={"ids": [a, b]})
        http.patch(f"/api/albums/{album['id']}", json={"name": "B"})  # names in each XMP
        assert {p["asset_id"]: p["version"] for p in pending_changes(sessions)} == {a: 4, b: 3}
