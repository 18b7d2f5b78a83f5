"""The asset summaries on both databases: ``place_counts`` (migration 0030) and the
timeline's ``timeline_cameras`` and ``timeline_places`` (0032) kept by their triggers
through inserts, place, camera and date changes, moves, Live Photo pairings and deletes
(equal to a count of the assets, and the places listing equal to one counted from them);
and each summary's rebuild (map cells, timeline days, places, search documents) giving
exactly what the triggers and writers gave on a real library of scanned photos."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, func, insert, select, update

from photo_pipeline.db.schema import (
    asset_search,
    assets,
    map_cells,
    place_counts,
    timeline_cameras,
    timeline_days,
    timeline_places,
)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline import search_index
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.map import MapBrowser, rebuild_map_cells
from photo_pipeline.pipeline.library.map_grid import map_cell
from photo_pipeline.pipeline.library.places import rebuild_place_counts
from photo_pipeline.pipeline.library.timeline import (
    rebuild_timeline_days,
    rebuild_timeline_facets,
)
from tests.factories import photos
from tests.support.catalogue_rows import add_assets

# (country code, country, region, city) by asset id modulo len(PLACES); None: no place.
PLACES = [
    ("FR", "France", "Île-de-France", "Paris"),
    ("FR", "France", "Île-de-France", "Versailles"),
    ("FR", "France", None, "Nowhere-sur-Loire"),
    ("JP", "Japan", "Tokyo", "Tokyo"),
    ("NP", None, None, None),
    None,
]


def counted(factory) -> dict[tuple[str, str, str, str], tuple[int, int]]:
    """place_counts as counted from the assets now: key → (count, located)."""
    key = [
        assets.c.country_code,
        func.coalesce(assets.c.country, ""),
        func.coalesce(assets.c.region, ""),
        func.coalesce(assets.c.city, ""),
    ]
    query = (
        select(*key, func.count(), func.count(assets.c.gps_latitude))
        .where(assets.c.country_code.is_not(None), assets.c.live_of.is_(None))
        .group_by(*key)
    )
    with factory() as session:
        return {tuple(r[:4]): (r[4], r[5]) for r in session.execute(query)}


def kept(factory) -> dict[tuple[str, str, str, str], tuple]:
    with factory() as session:
        return {
            (r.country_code, r.country, r.region, r.city): (
                r.count, r.located, r.south, r.north, r.west, r.east
            )
            for r in session.execute(select(place_counts))
        }  # fmt: skip


def listing_from_assets(factory, country=None, region=None) -> list[dict]:
    """The places listing as it was counted from every asset before the summary."""
    with factory() as session:
        rows = session.execute(
            select(assets).where(assets.c.country_code.is_not(None), assets.c.live_of.is_(None))
        ).all()
    groups: dict[tuple, list] = {}
    for r in rows:
        if country is None:
            level, key = "country", (r.country_code, r.country)
        elif r.country_code != country:
            continue
        elif region is None:
            level, key = ("region", (r.country_code, r.region)) if r.region else (
                "city", (r.country_code, r.city)
            )  # fmt: skip
        elif r.region != region:
            continue
        else:
            level, key = "city", (r.country_code, r.city)
        groups.setdefault((level, *key), []).append(r)
    found = []
    for (level, code, name), members in groups.items():
        located = [m for m in members if m.gps_latitude is not None]
        name = name or (code if level == "country" else None)
        if not name or not located:
            continue
        lats = [m.gps_latitude for m in located]
        lons = [m.gps_longitude for m in located]
        bbox = [min(lons), min(lats), max(lons), max(lats)]
        found.append(
            {
                "name": name,
                "level": level,
                "country_code": code,
                "count": len(members),
                "bbox": bbox,
            }
        )
    found.sort(key=lambda p: (-p["count"], p["name"]))
    return found


FACETS = {
    timeline_cameras: ("make", "model"),
    timeline_places: ("country_code", "country", "region", "city", "district"),
}


def facets_kept(factory) -> dict[str, dict[tuple, int]]:
    with factory() as session:
        return {
            table.name: {tuple(row[:-1]): row[-1] for row in session.execute(select(table))}
            for table in FACETS
        }


def facets_counted(factory) -> dict[str, dict[tuple, int]]:
    """What each timeline summary should hold, counted here from the asset rows."""
    found: dict[str, dict[tuple, int]] = {table.name: {} for table in FACETS}
    with factory() as session:
        rows = session.execute(select(assets).where(assets.c.live_of.is_(None))).all()
    for row in rows:
        for table, keys in FACETS.items():
            values = [getattr(row, k) for k in keys]
            if any(v is not None for v in values):
                key = (*(v or "" for v in values), row.taken_local[:10])
                found[table.name][key] = found[table.name].get(key, 0) + 1
    return found


def assert_kept(factory, *, exact_bounds: bool) -> None:
    summary, recount = kept(factory), counted(factory)
    assert {k: v[:2] for k, v in summary.items()} == recount
    assert facets_kept(factory) == facets_counted(factory)
    browser = MapBrowser(factory)
    for args in ((), ("FR",), ("FR", "Île-de-France"), ("JP",), ("NP",)):
        listed, expected = browser.places(*args), listing_from_assets(factory, *args)
        assert [{**p, "bbox": None} for p in listed] == [{**p, "bbox": None} for p in expected]
        for got, want in zip(listed, expected, strict=True):
            west, south, east, north = got["bbox"]
            w_west, w_south, w_east, w_north = want["bbox"]
            if exact_bounds:
                assert got["bbox"] == pytest.approx(want["bbox"]), got
            else:  # bounds only grow after a removal
                assert west <= w_west and south <= w_south, got
                assert east >= w_east and north >= w_north, got


def set_places(factory, ids: list[int]) -> None:
    """Each asset its place (by id) and, for two in three, a position near it."""
    with factory.begin() as session:
        for asset_id in ids:
            place = PLACES[asset_id % len(PLACES)]
            located = asset_id % 3 != 0
            lat, lon = (45 + asset_id / 1000, 2 + asset_id / 500) if located else (None, None)
            names = ("country_code", "country", "region", "city")
            values = dict(zip(names, place or (None,) * 4, strict=True))
            session.execute(
                update(assets)
                .where(assets.c.id == asset_id)
                .values(**values, gps_latitude=lat, gps_longitude=lon, map_cell=map_cell(lat, lon))
            )


def test_the_triggers_keep_the_places_equal_to_a_count_of_the_assets(session_factory):
    ids = add_assets(session_factory, [n for n in range(120)])
    set_places(session_factory, ids)
    assert_kept(session_factory, exact_bounds=True)
    assert len(kept(session_factory)) == 5
    with session_factory.begin() as session:
        # A place's city renamed, an asset moved to another country, positions dropped.
        session.execute(update(assets).where(assets.c.city == "Versailles").values(city="Sèvres"))
        session.execute(update(assets).where(assets.c.id == 4).values(country_code="JP"))
        session.execute(
            update(assets)
            .where(assets.c.id.between(30, 50))
            .values(gps_latitude=None, gps_longitude=None, map_cell=None)
        )
        # Live Photo motion halves leave the places; unpaired, they come back.
        session.execute(update(assets).where(assets.c.id % 7 == 0).values(live_of=1))
        session.execute(update(assets).where(assets.c.id % 14 == 0).values(live_of=None))
        # A write that changes nothing of the place costs the summary nothing.
        session.execute(update(assets).values(make="Other"))
        # Cameras and days change (the timeline's summaries follow).
        session.execute(update(assets).where(assets.c.id % 3 == 0).values(model="EOS R5"))
        session.execute(update(assets).where(assets.c.id % 9 == 1).values(make=None))
        session.execute(
            update(assets).where(assets.c.id % 5 == 0).values(taken_local="2019-06-14T12:00:00")
        )
        session.execute(update(assets).where(assets.c.id == 8).values(district="Montmartre"))
    assert_kept(session_factory, exact_bounds=False)
    assert ("FR", "France", "Île-de-France", "Versailles") not in kept(session_factory)
    with session_factory.begin() as session:
        session.execute(delete(assets).where(assets.c.id % 4 == 0))
    assert_kept(session_factory, exact_bounds=False)
    # Copies of the first 40 inserted in one statement (one summary write on PostgreSQL).
    renamed = {
        "id": assets.c.id + 100_000,
        "content_hash": func.substr(assets.c.content_hash, 2).concat("y"),
    }
    copies = select(*[renamed.get(c.name, c) for c in assets.c]).where(assets.c.id < 40)
    with session_factory.begin() as session:
        session.execute(insert(assets).from_select([c.name for c in assets.c], copies))
    assert_kept(session_factory, exact_bounds=False)
    with session_factory.begin() as session:
        rebuild_place_counts(session)
        rebuild_timeline_facets(session)
    assert_kept(session_factory, exact_bounds=True)
    with session_factory.begin() as session:
        session.execute(delete(assets))
    assert kept(session_factory) == {}
    assert facets_kept(session_factory) == {"timeline_cameras": {}, "timeline_places": {}}


# ── each rebuild equals what the triggers and writers kept, on a scanned library ──────
TRIP = [
    ("paris-1.jpg", "2024:03:31 10:00:00", (48.8566, 2.3522, 35.0)),
    ("paris-2.jpg", "2024:03:31 11:00:00", (48.8606, 2.3376, 35.0)),
    ("versailles.jpg", "2024:04:01 09:00:00", (48.8049, 2.1204, 100.0)),
    ("kathmandu.jpg", "2024:05:02 09:00:00", (27.7172, 85.3240, 1400.0)),
    ("tokyo.jpg", "2024:05:03 09:00:00", (35.6895, 139.6917, 10.0)),
    ("atlantic.jpg", "2024:07:16 12:00:00", (30.0, -40.0, 0.0)),
    ("no-gps.jpg", "2024:07:18 12:00:00", None),
]


def summaries(factory) -> dict[str, object]:
    with factory() as session:
        return {
            "map_cells": sorted(tuple(r) for r in session.execute(select(map_cells))),
            "timeline_days": sorted(tuple(r) for r in session.execute(select(timeline_days))),
            "place_counts": sorted(tuple(r) for r in session.execute(select(place_counts))),
            **{
                table.name: sorted(tuple(r) for r in session.execute(select(table)))
                for table in FACETS
            },
            "asset_search": sorted(tuple(r) for r in session.execute(select(asset_search))),
        }


def test_each_rebuild_gives_what_the_triggers_and_writers_kept(session_factory, tmp_path):
    root = tmp_path / "trip"
    for n, (name, taken, gps) in enumerate(TRIP):
        photos.jpeg(root / name, size=(32, 24), seed=n, subsec=None, taken=taken, gps=gps)
    service = JobService(session_factory)
    [job] = import_folders(service, Catalog(session_factory), [root])
    config = WorkerConfig(burst=True, concurrency=1, executor="thread", poll_seconds=0.05)
    Worker(service, WorkerRegistry(session_factory), registry, config).run()
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    before = summaries(session_factory)
    assert all(before.values()), before  # each summary holds rows
    assert len(before["place_counts"]) >= 4
    with session_factory.begin() as session:
        rebuild_map_cells(session)
        rebuild_timeline_days(session)
        rebuild_place_counts(session)
        rebuild_timeline_facets(session)
        assert search_index.rebuild(session, chunk=3) == len(TRIP)
    after = summaries(session_factory)
    for name in before:
        if name == "map_cells":  # the position sums, added in another order
            assert [r[:3] + r[5:] for r in after[name]] == [r[:3] + r[5:] for r in before[name]]
            for got, want in zip(after[name], before[name], strict=True):
                assert got[3:5] == pytest.approx(want[3:5])
        else:
            assert after[name] == before[name], name
