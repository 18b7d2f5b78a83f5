"""The curation commands on both databases: rate, favorite, reject, tag, album, and
the `assets` filters they feed (a parent tag matches its children, rating ranges),
each idempotent, each bad input a stable code and exit status."""

from __future__ import annotations

import json

import pytest

from tests.factories import photos

DAYS = {
    "a.jpg": "2024:05:01 10:00:00",
    "b.jpg": "2024:05:03 09:00:00",
    "c.jpg": "2024:06:10 18:30:00",
    "d.jpg": "2024:07:20 07:15:00",
}


@pytest.fixture
def ids(cli, tmp_path) -> dict[str, int]:
    root = tmp_path / "trip"
    for n, (name, taken) in enumerate(DAYS.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, taken=taken, offset=None, subsec=None)
    assert cli("import", str(root), "--wait", "--json")[0] == 0
    code, out, _ = cli("assets", "--json")
    assert code == 0
    return {row["name"]: row["id"] for row in json.loads(out)}


def listed(cli, *options: str) -> list[str]:
    code, out, err = cli("assets", "--json", *options)
    assert code == 0, err
    return sorted(row["name"] for row in json.loads(out))


def run_json(cli, *args: str):
    code, out, err = cli(*args, "--json")
    assert code == 0, err
    return json.loads(out)


def test_rate_favorite_reject_are_idempotent_and_listed(cli, ids):
    a, b, c = ids["a.jpg"], ids["b.jpg"], ids["c.jpg"]
    assert run_json(cli, "rate", "4", str(a), str(b)) == {
        "rating": 4, "changed": [a, b], "unchanged": []
    }  # fmt: skip
    again = run_json(cli, "rate", "4", str(a), str(b))
    assert again["changed"] == [] and again["unchanged"] == [a, b]
    assert run_json(cli, "rate", "2", str(c))["changed"] == [c]
    assert run_json(cli, "favorite", str(a))["changed"] == [a]
    assert run_json(cli, "favorite", str(a))["unchanged"] == [a]
    assert run_json(cli, "reject", str(c))["changed"] == [c]

    rows = {r["name"]: r for r in json.loads(cli("assets", "--json")[1])}
    assert (rows["a.jpg"]["rating"], rows["a.jpg"]["favorite"], rows["a.jpg"]["rejected"]) == (
        4, True, False
    )  # fmt: skip
    assert rows["c.jpg"]["rejected"] is True and rows["d.jpg"]["rating"] == 0
    assert rows["d.jpg"]["tags"] == [] and rows["d.jpg"]["albums"] == []

    assert listed(cli, "--rating", "4") == ["a.jpg", "b.jpg"]
    assert listed(cli, "--rating", ">=2") == ["a.jpg", "b.jpg", "c.jpg"]
    assert listed(cli, "--rating", ">2") == ["a.jpg", "b.jpg"]
    assert listed(cli, "--rating", "<=2") == ["c.jpg", "d.jpg"]  # unrated is 0
    assert listed(cli, "--rating", "0") == ["d.jpg"]
    assert listed(cli, "--rating", "1-3") == ["c.jpg"]
    assert listed(cli, "--favorite") == ["a.jpg"]
    assert listed(cli, "--not-favorite") == ["b.jpg", "c.jpg", "d.jpg"]
    assert listed(cli, "--rejected") == ["c.jpg"]
    assert listed(cli, "--not-rejected", "--rating", ">=2") == ["a.jpg", "b.jpg"]

    assert run_json(cli, "favorite", "--off", str(a))["changed"] == [a]
    assert run_json(cli, "reject", "--off", str(c))["changed"] == [c]
    assert listed(cli, "--favorite") == [] and listed(cli, "--rejected") == []
    assert run_json(cli, "rate", "0", str(a))["changed"] == [a]
    assert listed(cli, "--rating", "0") == ["a.jpg", "d.jpg"]

    code, out, _ = cli("assets")
    assert code == 0 and "marks" in out and "★★★★" in out


@pytest.mark.parametrize("value", ["6", "-1", "x"])
def test_a_rating_outside_0_to_5_is_refused(cli, ids, value):
    code, _, err = cli("rate", "--", value, str(ids["a.jpg"]))
    assert code == 2
    assert "invalid_rating" in err or "Invalid value" in err


@pytest.mark.parametrize("value", ["6", ">5", "<0", "4-2", ">=x", ""])
def test_a_rating_filter_that_matches_no_rating_is_refused(cli, ids, value):
    code, _, err = cli("assets", "--rating", value)
    assert code == 2 and "invalid_rating" in err


def test_unknown_assets_change_nothing_and_exit_3(cli, ids):
    a = ids["a.jpg"]
    code, _, err = cli("rate", "3", str(a), "999999")
    assert code == 3 and "asset_not_found" in err and "999999" in err
    assert listed(cli, "--rating", "3") == []  # all or nothing
    for args in (("favorite", "999999"), ("reject", "999999"), ("tag", "add", "x", "999999")):
        code, _, err = cli(*args)
        assert code == 3 and "asset_not_found" in err


def test_tags_nest_and_a_parent_finds_its_children(cli, ids):
    a, b, c = ids["a.jpg"], ids["b.jpg"], ids["c.jpg"]
    assert run_json(cli, "tag", "add", "Places|France|Paris", str(a))["changed"] == [a]
    assert run_json(cli, "tag", "add", "places|france|paris", str(a))["unchanged"] == [a]
    run_json(cli, "tag", "add", " Places | France | Lyon ", str(b))
    run_json(cli, "tag", "add", "Places|Francesca", str(c))  # a sibling, not a child
    run_json(cli, "tag", "add", "family", str(c), str(a))

    assert listed(cli, "--tag", "Places|France") == ["a.jpg", "b.jpg"]
    assert listed(cli, "--tag", "places") == ["a.jpg", "b.jpg", "c.jpg"]
    assert listed(cli, "--tag", "Places|France|Paris") == ["a.jpg"]
    assert listed(cli, "--tag", "Family", "--tag", "family") == ["a.jpg", "c.jpg"]
    assert listed(cli, "--tag", "Places|Fr") == []  # a prefix of a level is no parent

    rows = {r["name"]: r for r in json.loads(cli("assets", "--json")[1])}
    assert rows["a.jpg"]["tags"] == ["family", "Places|France|Paris"]
    assert rows["b.jpg"]["tags"] == ["Places|France|Lyon"]

    tags = {t["path"]: t for t in run_json(cli, "tag", "list")}
    assert tags["Places|France|Paris"]["count"] == 1 and tags["family"]["count"] == 2
    assert tags["Places|France|Lyon"]["parent"] == "Places|France"
    code, out, _ = cli("tag", "list")
    assert code == 0 and "Paris" in out

    assert run_json(cli, "tag", "remove", "FAMILY", str(a))["changed"] == [a]
    assert run_json(cli, "tag", "remove", "family", str(a))["unchanged"] == [a]
    assert listed(cli, "--tag", "family") == ["c.jpg"]
    run_json(cli, "tag", "remove", "family", str(c))
    assert "family" not in {t["path"] for t in run_json(cli, "tag", "list")}  # forgotten
    assert run_json(cli, "tag", "remove", "family", str(c))["unchanged"] == [c]  # a repeat
    code, _, err = cli("tag", "remove", "famliy", str(c))
    assert code == 3 and "tag_not_found" in err


@pytest.mark.parametrize("tag", ["", "|", "a||b", "a|", "x\x07y", "x" * 501])
def test_a_malformed_tag_is_refused(cli, ids, tag):
    code, _, err = cli("tag", "add", "--", tag, str(ids["a.jpg"]))
    assert code == 2 and "invalid_tag" in err
    code, _, err = cli("assets", "--tag", tag)
    assert code == 2 and "invalid_tag" in err


def test_albums_hold_photos_with_a_date_range_and_a_cover(cli, ids):
    a, b, c, d = (ids[n] for n in ("a.jpg", "b.jpg", "c.jpg", "d.jpg"))
    made = run_json(cli, "album", "create", "Summer 2024")
    assert made["created"] is True and made["count"] == 0 and made["cover_asset_id"] is None
    again = run_json(cli, "album", "create", "summer  2024")
    assert again["created"] is False and again["id"] == made["id"]
    run_json(cli, "album", "create", "Other")

    assert run_json(cli, "album", "add", "Summer 2024", str(c))["changed"] == [c]
    added = run_json(cli, "album", "add", "Summer 2024", str(c), str(b))
    assert added["changed"] == [b] and added["unchanged"] == [c]
    assert run_json(cli, "album", "add", str(made["id"]), str(b))["unchanged"] == [b]
    run_json(cli, "album", "add", "Other", str(b), str(d))

    shown = run_json(cli, "album", "show", "Summer 2024")
    assert shown["count"] == 2
    assert (shown["taken_from"], shown["taken_to"]) == (
        "2024-05-03T09:00:00",
        "2024-06-10T18:30:00",
    )
    assert shown["cover_asset_id"] == c and shown["cover_chosen"] is False  # first added
    assert [r["name"] for r in shown["assets"]] == ["b.jpg", "c.jpg"]

    assert listed(cli, "--album", "Summer 2024") == ["b.jpg", "c.jpg"]
    assert listed(cli, "--album", "other") == ["b.jpg", "d.jpg"]
    rows = {r["name"]: r for r in json.loads(cli("assets", "--json")[1])}
    assert [al["name"] for al in rows["b.jpg"]["albums"]] == ["Other", "Summer 2024"]

    cover = run_json(cli, "album", "cover", "Summer 2024", str(b))
    assert cover["cover_asset_id"] == b and cover["cover_chosen"] is True
    code, _, err = cli("album", "cover", "Summer 2024", str(a))
    assert code == 2 and "asset_not_in_album" in err

    removed = run_json(cli, "album", "remove", "Summer 2024", str(b))
    assert removed["changed"] == [b] and removed["album"]["cover_asset_id"] == c
    assert removed["album"]["taken_from"] == "2024-06-10T18:30:00"

    listing = {al["name"]: al for al in run_json(cli, "album", "list")}
    assert listing["Summer 2024"]["count"] == 1 and listing["Other"]["count"] == 2
    code, out, _ = cli("album", "list")
    assert code == 0 and "Summer 2024" in out and "2024-05-03" in out

    gone = run_json(cli, "album", "remove", "Other")
    assert gone["removed"]["name"] == "Other"
    assert len(listed(cli)) == 4  # the photos stay
    code, _, err = cli("album", "show", "Other")
    assert code == 3 and "album_not_found" in err
    code, _, err = cli("assets", "--album", "Other")
    assert code == 3 and "album_not_found" in err
    code, _, err = cli("album", "add", "Nope", str(a))
    assert code == 3 and "album_not_found" in err
    code, _, err = cli("album", "create", "  ")
    assert code == 2 and "invalid_album_name" in err
    code, _, err = cli("album", "rename", "Summer 2024", "Holidays")
    assert code == 0 and "Holidays" in cli("album", "list")[1]


def test_filters_page_by_keyset(cli, ids):
    from photo_pipeline.cli.common import library
    from photo_pipeline.pipeline.curation import CurationFilter, RatingRange
    from photo_pipeline.pipeline.library.catalog import Catalog

    every = [str(i) for i in ids.values()]
    run_json(cli, "rate", "5", *every)
    run_json(cli, "tag", "add", "Trips|Spain", *every[1:])
    where = CurationFilter(rating=RatingRange(5, 5), tag="trips")
    catalog = Catalog(library().sessions)
    for sort in ("taken", "taken-utc", "added"):
        paged = [r["id"] for r in catalog.iter_assets(curation=where, page_size=1, sort=sort)]
        whole = [r["id"] for r in catalog.iter_assets(curation=where, sort=sort)]
        assert paged == whole and len(whole) == 3
