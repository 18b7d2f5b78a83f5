"""Search (#34.3) on both databases, over a real server and the real jobs: the words
of file names, cameras, lenses and places (filled by the places lookup of the import)
found by prefix, date words and kinds read into the listing's filters, hostile text
that never errors, and an index that stays current after an import, a re-read, a
timeshift, a place change and a tag or album put on, renamed or taken off."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select, text, update

from photo_pipeline.db.dialect import is_postgresql
from photo_pipeline.db.schema import assets
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.curation.albums import (
    add_to_album,
    create_album,
    delete_album,
    remove_from_album,
    update_album,
)
from photo_pipeline.pipeline.curation.marks import set_favorite, set_rating
from photo_pipeline.pipeline.curation.tags import add_tag, remove_tag
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.ingest.places import start_backfill
from photo_pipeline.pipeline.library import browse
from photo_pipeline.pipeline.library.browse import _filtered
from photo_pipeline.pipeline.library.search import parse
from photo_pipeline.pipeline.timeshift.job import start_timeshift
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.photo_jobs import run_library_jobs
from tests.support.search_library import LOUVRE, MITTE, PARIS_2019, write_planted


@pytest.fixture
def api(db_url, tmp_path):
    with running_server(db_url, tmp_path / "home") as server:
        yield server


def plant(api, root) -> dict[str, int]:
    """Import the planted photos and a video; asset id by file name."""
    write_planted(root)
    lib = api.library
    import_folders(lib.service, lib.catalog, [root])
    run_library_jobs(lib)
    return {f["path"]: f["asset_id"] for f in lib.catalog.files()}


def names(http, q: str, **params) -> set[str]:
    """The file names of everything ``/api/search?q=`` lists, over all its pages."""
    found, cursor = [], None
    while True:
        response = http.get(
            "/api/search",
            params={"q": q, "limit": 2, **params, **({"cursor": cursor} if cursor else {})},
        )
        assert response.status_code == 200, response.text
        found += [a["name"] for a in response.json()["assets"]]
        cursor = response.json()["next_cursor"]
        if cursor is None:
            assert len(found) == len(set(found))
            return set(found)


# The shapes of a match (search_index.matching): the few matching assets listed by id;
# the listing's index walked, each asset looked up in the set of matches (SQLite; on
# PostgreSQL the same as "probed"); walked with a probe of the search index per asset.
SHAPES = pytest.mark.parametrize(
    "few, set_max",
    [(search_index.FEW, search_index.SET_MAX), (0, search_index.SET_MAX), (0, 0)],
    ids=["by-ids", "members", "probed"],
)


@SHAPES
def test_words_dates_and_kinds_find_exactly_the_planted_assets(
    api, tmp_path, few, set_max, monkeypatch
):
    """Every shape of the match finds the same assets."""
    monkeypatch.setattr(search_index, "FEW", few)
    monkeypatch.setattr(search_index, "SET_MAX", set_max)
    plant(api, tmp_path / "photos")
    with api.client() as http:
        assert names(http, "paris 2019") == PARIS_2019
        assert names(http, "Paris 2019", sort="taken") == PARIS_2019
        assert names(http, "pari") == PARIS_2019 | {"louvre-2018.jpg"}  # a prefix, typed
        assert names(http, "PARÍS") == PARIS_2019 | {"louvre-2018.jpg"}  # case, accents
        assert names(http, "île-de-france 2019") == PARIS_2019
        assert names(http, "france june 2019") == {"louvre.jpg"}
        assert names(http, "14 june 2019") == {"louvre.jpg", "mitte-2019.jpg"}
        assert names(http, "2019-06-14 berlin") == {"mitte-2019.jpg"}
        assert names(http, "kabukicho") == {"DSC_0042.jpg"}  # a district
        assert names(http, "tokyo") == {"DSC_0042.jpg"}
        # camera as the file says it and as people read it, lens, file name
        assert names(http, "nikon d850") == {"DSC_0042.jpg"}
        assert names(http, "corporation") == {"DSC_0042.jpg"}
        assert names(http, "fujifilm x-t4") == {"no-place.jpg"}
        assert names(http, "nikkor 24") == {"DSC_0042.jpg"}
        assert names(http, "DSC_0042") == {"DSC_0042.jpg"}
        assert names(http, "dsc") == {"DSC_0042.jpg"}
        assert names(http, "canon eos r5 2018") == {"louvre-2018.jpg"}
        assert names(http, "video") == {"clip.mp4"}
        assert names(http, "video 2019") == {"clip.mp4"}
        assert names(http, "photo tokyo") == {"DSC_0042.jpg"}
        assert names(http, "video paris") == set()
        assert names(http, "zanzibar") == set()
        assert names(http, "paris 2020") == set()
        # Curation words: a favourite and a rating, as the library keeps them.
        assert names(http, "favorite") == set()
        ids = {f["path"].rsplit("/", 1)[-1]: f["asset_id"] for f in api.library.catalog.files()}
        set_favorite(api.library.sessions, [ids["louvre.jpg"]], True)
        set_rating(api.library.sessions, [ids["louvre.jpg"], ids["DSC_0042.jpg"]], 4)
        assert names(http, "favorite paris") == {"louvre.jpg"}
        assert names(http, "rating:>=4") == {"louvre.jpg", "DSC_0042.jpg"}
        assert names(http, "tokyo stars:4") == {"DSC_0042.jpg"}
        first = http.get("/api/search", params={"q": "paris 2019"}).json()
        assert first["total"] == 2 and first["total_exact"] is True
        assert {"thumbnail_url", "taken_local", "place", "camera"} <= set(first["assets"][0])


@SHAPES
def test_a_sampled_total_counts_the_matches_of_its_samples(
    api, tmp_path, few, set_max, monkeypatch
):
    """A library too large for an exact total is counted in samples of ids: the known
    set of matches is cut to each sample's ids, the walk's probe checks each asset.
    With one sample spanning every id the estimate is the count."""
    monkeypatch.setattr(search_index, "FEW", few)
    monkeypatch.setattr(search_index, "SET_MAX", set_max)
    plant(api, tmp_path / "photos")
    with api.library.sessions() as session:
        span = session.scalar(select(func.max(assets.c.id))) - session.scalar(
            select(func.min(assets.c.id))
        )
    monkeypatch.setattr(browse, "EXACT_TOTAL_UP_TO", 0)
    monkeypatch.setattr(browse, "_SAMPLES", 1)
    monkeypatch.setattr(browse, "_SAMPLE_SPAN", span + 1)
    with api.client() as http:
        for q, want in (("paris 2019", PARIS_2019), ("pari", PARIS_2019 | {"louvre-2018.jpg"})):
            first = http.get("/api/search", params={"q": q}).json()
            assert (first["total"], first["total_exact"]) == (len(want), False), q
    monkeypatch.setattr(browse, "_SAMPLE_SPAN", 1)  # a sample of the first id only
    with api.client() as http:
        first = http.get("/api/search", params={"q": "zanzibar"}).json()
        assert (first["total"], first["total_exact"]) == (0, False)


@SHAPES
def test_tags_and_albums_are_search_words(api, tmp_path, few, set_max, monkeypatch):
    """A tag's levels and an album's name find its assets, with the other words; a tag
    taken off, an album renamed, emptied or removed is found by its words no more."""
    monkeypatch.setattr(search_index, "FEW", few)
    monkeypatch.setattr(search_index, "SET_MAX", set_max)
    ids = {p.rsplit("/", 1)[-1]: a for p, a in plant(api, tmp_path / "photos").items()}
    sessions = api.library.sessions
    with api.client() as http:
        assert names(http, "honeymoon") == set()
        add_tag(sessions, "Trips|Honeymoon", [ids["louvre.jpg"], ids["DSC_0042.jpg"]])
        assert names(http, "honeymoon") == {"louvre.jpg", "DSC_0042.jpg"}
        assert names(http, "trips") == {"louvre.jpg", "DSC_0042.jpg"}  # a parent level
        assert names(http, "honeym paris") == {"louvre.jpg"}  # a prefix, with a place
        assert names(http, "honeymoon 2019 tokyo") == {"DSC_0042.jpg"}
        album, _ = create_album(sessions, "Été à Paris")
        add_to_album(sessions, album["id"], [ids["eiffel.jpg"], ids["louvre-2018.jpg"]])
        assert names(http, "ete") == {"eiffel.jpg", "louvre-2018.jpg"}  # accents folded
        assert names(http, "été 2019") == {"eiffel.jpg"}
        assert names(http, "paris 2019") == PARIS_2019  # the album adds no one
        # taken off, renamed, emptied, removed: the words go with them
        remove_tag(sessions, "Trips|Honeymoon", [ids["DSC_0042.jpg"]])
        assert names(http, "honeymoon") == {"louvre.jpg"}
        update_album(sessions, album["id"], name="Summer walks")
        assert names(http, "ete") == set()
        assert names(http, "summer walks") == {"eiffel.jpg", "louvre-2018.jpg"}
        remove_from_album(sessions, album["id"], [ids["louvre-2018.jpg"]])
        assert names(http, "summer") == {"eiffel.jpg"}
        delete_album(sessions, album["id"])
        assert names(http, "summer") == set()
        # a file's other words survive the curation rewrites
        assert names(http, "nikon d850") == {"DSC_0042.jpg"}
        assert names(http, "paris 2019") == PARIS_2019


def test_hostile_text_never_errors(api, tmp_path):
    plant(api, tmp_path / "photos")
    hostile = [
        '"', '""', '"paris', 'paris"', "*", "pari*", "NEAR", "NEAR(paris berlin)",
        "paris NEAR/2 2019", "-paris", "paris -berlin", "paris OR berlin", "AND", "NOT paris",
        "(", ")", "^paris",
        "paris:*", "paris & berlin", "!paris", "paris | berlin", "<->", "document:paris",
        "'; DROP TABLE assets; --", "' OR 1=1 --", "%", "_", "\\", "paris\\", "{paris}",
        "rowid:1", "asset_search_fts", "🙂", "東京", "ß", "ǅ", "²⁰¹⁹", "٢٠١٩", "0", "2019-02-30",
        "31 june 2019", "99999", "-", ":", "a" * 200,
    ]  # fmt: skip
    with api.client() as http:
        for q in hostile:
            response = http.get("/api/search", params={"q": q})
            assert response.status_code == 200, (q, response.text)
        assert names(http, '"paris') == names(http, "paris")
        assert names(http, "NEAR(paris berlin)") == set()  # near, paris and berlin: none has all
        assert names(http, "paris -berlin") == set()  # "-" is no operator: berlin is a word too
        for q, code in [
            ("a" * 201, "invalid_request"),
            ("paris\x00", "invalid_request"),
            ("rating:9", "invalid_rating"),
            ("photo video", "invalid_search"),
            (" ".join(f"w{n}" for n in range(17)), "invalid_search"),
        ]:
            response = http.get("/api/search", params={"q": q})
            assert response.status_code == 422, (q, response.text)
            assert response.headers["content-type"].startswith("application/problem+json")
            assert response.json()["code"] == code, q
        bad_cursor = http.get("/api/search", params={"q": "paris", "cursor": "abc"})
        assert bad_cursor.status_code == 422


def test_the_index_stays_current(api, tmp_path):
    root = tmp_path / "photos"
    ids = plant(api, root)
    lib = api.library
    with api.client() as http:
        # an import: a new photo is found at once
        photos.jpeg(root / "later.jpg", size=(32, 24), seed=40, taken="2019:07:01 12:00:00",
                    offset=None, subsec=None, gps=LOUVRE, make="SONY",
                    model="ILCE-7M3")  # fmt: skip
        import_folders(lib.service, lib.catalog, [root])
        run_library_jobs(lib)
        assert names(http, "paris 2019") == PARIS_2019 | {"later.jpg"}
        assert names(http, "sony ilce") == {"later.jpg"}
        # a re-read: the file now says another camera
        photos.jpeg(root / "later.jpg", size=(32, 24), seed=40, taken="2019:07:01 12:00:00",
                    offset=None, subsec=None, gps=LOUVRE, make="SONY", model="ILCE-7M3",
                    lens="FE 35mm F1.8")  # fmt: skip
        import_folders(lib.service, lib.catalog, [root], reread=True)
        run_library_jobs(lib)
        assert names(http, "fe 35mm") == {"later.jpg"}
        # a timeshift: the Eiffel photo moves to 2020
        start_timeshift(lib.service, asset_ids=[ids["eiffel.jpg"]], by="+366d")
        run_library_jobs(lib)
        assert names(http, "paris 2019") == {"louvre.jpg", "later.jpg"}
        assert names(http, "paris 2020") == {"eiffel.jpg"}
        # a place change: the Louvre photo's position is now Berlin, refreshed by the places job
        with lib.sessions.begin() as session:
            session.execute(
                update(assets)
                .where(assets.c.id == ids["louvre.jpg"])
                .values(gps_latitude=MITTE[0], gps_longitude=MITTE[1])
            )
        start_backfill(lib.service, refresh=True)
        run_library_jobs(lib)
        assert names(http, "paris 2019") == {"later.jpg"}
        assert names(http, "berlin 2019") == {"mitte-2019.jpg", "louvre.jpg"}
        # a file gone: its name is no longer a word of its asset
        (root / "DSC_0042.jpg").rename(root / "renamed.jpg")
        import_folders(lib.service, lib.catalog, [root])
        run_library_jobs(lib)
        assert names(http, "dsc") == set()
        assert names(http, "renamed nikon") == {"renamed.jpg"}


def test_the_database_index_answers_the_match(api, tmp_path, monkeypatch):
    """The matching assets are looked up in the FTS5 table or through the GIN index;
    when they are many, a page walks the listing's index and checks each asset's
    words by asset_search's key."""
    plant(api, tmp_path / "photos")
    lib = api.library

    def plan(session, statement) -> str:
        sql = str(statement.compile(session.get_bind(), compile_kwargs={"literal_binds": True}))
        if is_postgresql(session):
            return "\n".join(session.scalars(text(f"EXPLAIN {sql}")))
        return "\n".join(str(r[-1]) for r in session.execute(text(f"EXPLAIN QUERY PLAN {sql}")))

    with lib.sessions() as session:
        postgresql = is_postgresql(session)
        if postgresql:
            session.execute(text("SET LOCAL enable_seqscan = off"))
        lookup = plan(
            session,
            text(
                "SELECT asset_id FROM asset_search WHERE to_tsvector('simple', document) "
                "@@ to_tsquery('simple', 'pari:* & nikon:*')"
                if postgresql
                else "SELECT rowid FROM asset_search_fts WHERE asset_search_fts MATCH "
                '\'"pari"* "nikon"*\''
            ),
        )
        if postgresql:
            assert "ix_asset_search_document" in lookup, lookup
        else:
            assert "VIRTUAL TABLE INDEX" in lookup and "asset_search_fts" in lookup, lookup
        monkeypatch.setattr(search_index, "FEW", 0)
        if not postgresql:
            members = _filtered(select(assets.c.id), parse("pari"))
            members = members.where(search_index.matching(session, ("pari",))).order_by(
                assets.c.taken_order, assets.c.id
            )
            walked = plan(session, members.limit(101))
            assert "ix_assets_taken_order_id" in walked, walked
            assert "LIST SUBQUERY" in walked and "asset_search_fts" in walked, walked
            assert "TEMP B-TREE" not in walked, walked  # no sort of the matches
        monkeypatch.setattr(search_index, "SET_MAX", 0)
        probed = _filtered(select(assets.c.id), parse("pari"))
        probed = probed.where(search_index.matching(session, ("pari",))).order_by(
            assets.c.taken_order, assets.c.id
        )
        found = plan(session, probed.limit(101))
        if postgresql:
            assert "pk_asset_search" in found, found
        else:
            assert "ix_assets_taken_order_id" in found, found
            assert "asset_search USING INTEGER PRIMARY KEY" in found, found


def test_the_cli_searches(api, tmp_path, cli, monkeypatch):
    plant(api, tmp_path / "photos")
    code, out, err = cli("search", "paris 2019")
    assert code == 0, err
    assert "louvre.jpg" in out and "eiffel.jpg" in out and "mitte" not in out
    code, out, err = cli("search", "paris 2019", "--json")
    assert code == 0, err
    import json

    assert {row["name"] for row in json.loads(out)} == PARIS_2019
    code, out, err = cli("search", "zanzibar")
    assert code == 0 and "no photos" in out
    code, out, err = cli("search", "rating:9")
    assert code != 0 and "invalid_rating" in err


def test_the_migration_indexes_an_existing_library(api, tmp_path):
    """A library catalogued before 0024 is searchable once upgraded: the migration's
    backfill writes the words the catalogue's own writes would."""
    from photo_pipeline.db.migrate import downgrade, upgrade
    from photo_pipeline.db.schema import asset_search

    plant(api, tmp_path / "photos")
    lib = api.library
    engine = lib.sessions.kw["bind"]
    with lib.sessions() as session:
        written = {r.asset_id: r.document for r in session.execute(select(asset_search))}
    downgrade(engine, "0022")
    upgrade(engine)
    with lib.sessions() as session:
        backfilled = {r.asset_id: r.document for r in session.execute(select(asset_search))}
    assert backfilled == written
    with api.client() as http:
        assert names(http, "paris 2019") == PARIS_2019
        assert names(http, "nikon d850") == {"DSC_0042.jpg"}


def test_the_migration_adds_the_words_of_tags_and_albums(api, tmp_path):
    """A library curated before 0028 finds its tags and albums once upgraded: the
    migration writes the documents the curation writers would."""
    from photo_pipeline.db.migrate import downgrade, upgrade
    from photo_pipeline.db.schema import asset_search

    ids = {p.rsplit("/", 1)[-1]: a for p, a in plant(api, tmp_path / "photos").items()}
    lib = api.library
    with lib.sessions() as session:
        before = {r.asset_id: r.document for r in session.execute(select(asset_search))}
    add_tag(lib.sessions, "Trips|Honeymoon", [ids["louvre.jpg"]])
    album, _ = create_album(lib.sessions, "Été à Paris")
    add_to_album(lib.sessions, album["id"], [ids["louvre.jpg"], ids["eiffel.jpg"]])
    with lib.sessions() as session:
        written = {r.asset_id: r.document for r in session.execute(select(asset_search))}
    assert written != before
    engine = lib.sessions.kw["bind"]
    downgrade(engine, "0027")
    with lib.sessions.begin() as session:  # the documents as curation wrote them before
        for asset_id, document in before.items():
            session.execute(
                update(asset_search)
                .where(asset_search.c.asset_id == asset_id)
                .values(document=document)
            )
    upgrade(engine)
    with lib.sessions() as session:
        upgraded = {r.asset_id: r.document for r in session.execute(select(asset_search))}
    assert upgraded == written
    with api.client() as http:
        assert names(http, "honeymoon ete") == {"louvre.jpg"}
