"""Zones and places in the catalogue: filled by the scan, by the backfill job, and by
the migration for ordering; filtered and ordered by the asset listing."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import select, text, update

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import create_database_engine
from photo_pipeline.db.migrate import upgrade
from photo_pipeline.db.schema import assets
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.ingest.places import start_backfill
from photo_pipeline.pipeline.library.browse import AssetFilter, Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos

PLACE_COLUMNS = (
    "taken_local",
    "taken_offset_minutes",
    "taken_utc",
    "taken_order",
    "tz_name",
    "tz_source",
    "country_code",
    "country",
    "region",
    "city",
)

# name -> (jpeg keyword arguments, expected columns)
TRIP = {
    "paris-dst.jpg": (
        {"taken": "2024:03:31 03:30:00", "offset": None, "gps": (48.8566, 2.3522, 35.0)},
        {"tz_name": "Europe/Paris", "tz_source": "gps_timezone", "taken_offset_minutes": 120,
         "country_code": "FR", "country": "France", "city": "Paris"},
    ),
    "kathmandu.jpg": (
        {"taken": "2024:05:02 09:00:00", "offset": None, "gps": (27.7172, 85.3240, 1400.0)},
        {"tz_name": "Asia/Kathmandu", "tz_source": "gps_timezone", "taken_offset_minutes": 345,
         "country_code": "NP", "country": "Nepal", "city": "Kathmandu"},
    ),
    "phone-in-paris-with-offset.jpg": (
        {"taken": "2024:07:15 12:00:00", "offset": "-04:00", "gps": (48.8566, 2.3522, 35.0)},
        {"tz_name": "UTC-04:00", "tz_source": "exif_offset", "taken_offset_minutes": -240,
         "country_code": "FR", "city": "Paris"},
    ),
    "atlantic.jpg": (
        {"taken": "2024:07:16 12:00:00", "offset": None, "gps": (30.0, -40.0, 0.0)},
        {"tz_name": "Etc/GMT+3", "tz_source": "gps_timezone", "taken_offset_minutes": -180,
         "country_code": None, "city": None},
    ),
    "null-island.jpg": (
        {"taken": "2024:07:17 12:00:00", "offset": None, "gps": (0.0, 0.0, 0.0)},
        {"tz_name": None, "tz_source": "floating", "taken_offset_minutes": None,
         "taken_utc": None, "country_code": None, "city": None},
    ),
    "no-gps.jpg": (
        {"taken": "2024:07:18 12:00:00", "offset": None, "gps": None},
        {"tz_name": None, "tz_source": "floating", "taken_utc": None, "city": None},
    ),
}  # fmt: skip


def run_job(session_factory, job_id: str) -> dict:
    service = JobService(session_factory)
    config = WorkerConfig(burst=True, concurrency=1, executor="thread", poll_seconds=0.05)
    Worker(service, WorkerRegistry(session_factory), registry, config).run()
    final = service.get(job_id)
    assert final["state"] == JobState.SUCCEEDED, final
    return final


def import_trip(session_factory, root) -> dict[str, dict]:
    for n, (name, (exif, _)) in enumerate(TRIP.items()):
        photos.jpeg(root / name, size=(32, 24), seed=n, subsec=None, **exif)
    [job] = import_folders(JobService(session_factory), Catalog(session_factory), [root])
    run_job(session_factory, job["id"])
    return by_name(session_factory)


def by_name(session_factory) -> dict[str, dict]:
    catalog = Catalog(session_factory)
    rows = {a["id"]: a for a in catalog.assets()}
    return {f["path"]: rows[f["asset_id"]] for f in catalog.files()}


def test_scan_stores_zone_and_place_of_each_photo(session_factory, tmp_path):
    found = import_trip(session_factory, tmp_path / "trip")
    for name, (_, want) in TRIP.items():
        got = {key: found[name][key] for key in want}
        assert got == want, name
    paris = found["paris-dst.jpg"]
    assert paris["taken_utc"] == datetime(2024, 3, 31, 1, 30, tzinfo=UTC)
    assert paris["region"] == "Île-de-France"
    # GPS columns keep what the file says, even where it means "no position"
    assert found["null-island.jpg"]["gps_latitude"] == 0.0


def test_null_island_is_no_position_to_the_gps_filter(session_factory, tmp_path):
    paths = {a["id"]: p for p, a in import_trip(session_factory, tmp_path / "trip").items()}
    browser = Browser(session_factory)

    def names(has_gps: bool) -> set[str]:
        page, _ = browser.asset_page(AssetFilter(has_gps=has_gps))
        return {paths[a["id"]] for a in page}

    assert "null-island.jpg" in names(has_gps=False)
    assert "null-island.jpg" not in names(has_gps=True)
    assert "paris-dst.jpg" in names(has_gps=True)
    assert names(has_gps=True) | names(has_gps=False) == set(TRIP)


def test_place_filter_and_utc_ordering(session_factory, tmp_path):
    import_trip(session_factory, tmp_path / "trip")
    catalog = Catalog(session_factory)
    paths = {a["id"]: p for p, a in by_name(session_factory).items()}

    def names(**filters) -> list[str]:
        return [paths[a["id"]] for a in catalog.assets(**filters)]

    assert sorted(names(place="paris")) == ["paris-dst.jpg", "phone-in-paris-with-offset.jpg"]
    assert sorted(names(place="fr")) == ["paris-dst.jpg", "phone-in-paris-with-offset.jpg"]
    assert names(place="NEPAL") == ["kathmandu.jpg"]
    assert names(place="Bagmati") == ["kathmandu.jpg"]
    assert names(place="atlantis") == []
    assert names(place="%") == []  # a LIKE wildcard is text, not a pattern
    # by UTC: Paris 31 March, Kathmandu 2 May, the -04:00 phone 15 July 16:00 UTC,
    # the Atlantic (-03:00) 16 July 15:00 UTC, then the floating ones by wall clock
    ordered = names()
    assert ordered == list(TRIP)


def test_utc_ordering_interleaves_a_phone_with_offset_and_a_floating_camera(
    session_factory, tmp_path
):
    root = tmp_path / "two-devices"
    # Phone at -05:00 (New York): 09:00 local = 14:00 UTC. The floating camera says
    # 13:30 and 14:30: read as UTC they fall either side of the phone photo, although
    # by wall clock the phone photo (09:00) would come first.
    photos.jpeg(root / "phone.jpg", size=(32, 24), seed=1, taken="2024:06:01 09:00:00",
                offset="-05:00", subsec=None, make="Apple", model="iPhone 14 Pro")  # fmt: skip
    for n, clock in enumerate(("13:30:00", "14:30:00")):
        photos.jpeg(root / f"cam-{n}.jpg", size=(32, 24), seed=10 + n, subsec=None,
                    taken=f"2024:06:01 {clock}", offset=None)  # fmt: skip
    [job] = import_folders(JobService(session_factory), Catalog(session_factory), [root])
    run_job(session_factory, job["id"])
    paths = {a["id"]: p for p, a in by_name(session_factory).items()}
    listed = [paths[a["id"]] for a in Catalog(session_factory).assets()]
    assert listed == ["cam-0.jpg", "phone.jpg", "cam-1.jpg"]


def test_backfill_resolves_assets_catalogued_before_zones_existed(session_factory, tmp_path):
    found = import_trip(session_factory, tmp_path / "trip")
    with session_factory.begin() as session:  # as rows of a library older than 0006
        session.execute(  # which knew only the camera's own offset
            update(assets)
            .where(assets.c.tz_source != "exif_offset")
            .values(taken_offset_minutes=None, taken_utc=None)
        )
        session.execute(
            update(assets).values(
                tz_name=None, tz_source=None, country_code=None, country=None, region=None,
                city=None,
            )
        )  # fmt: skip
    service = JobService(session_factory)
    job = start_backfill(service).job
    assert start_backfill(service).job["id"] == job["id"]  # one backfill at a time
    run_job(session_factory, job["id"])
    assert service.progress(job["id"])["total"] == len(TRIP)
    again = by_name(session_factory)
    for name in TRIP:
        assert {k: again[name][k] for k in PLACE_COLUMNS} == {
            k: found[name][k] for k in PLACE_COLUMNS
        }, name
    second = start_backfill(service).job
    run_job(session_factory, second["id"])
    assert service.progress(second["id"])["total"] == 0  # nothing left unresolved


def test_migration_fills_the_listing_order_of_existing_assets(empty_db_url):
    engine = create_database_engine(empty_db_url)
    upgrade(engine, "0005")
    legacy = text(
        "INSERT INTO assets (content_hash, size, format, mime, width, height, orientation,"
        " taken_local, taken_offset_minutes, taken_utc, taken_source, created_at, updated_at)"
        " VALUES (:hash, 1, 'jpeg', 'image/jpeg', 1, 1, 1, :local, :offset, :utc,"
        " 'exif_original', 0, 0)"
    )
    with engine.begin() as conn:
        conn.execute(
            legacy,
            [
                # 12:00 at +02:00 = 10:00 UTC, stored as microseconds since the epoch
                {"hash": "a", "local": "2024-07-15T12:00:00", "offset": 120,
                 "utc": 1_721_037_600_000_000},
                {"hash": "b", "local": "2024-07-15T12:00:00.500000", "offset": None,
                 "utc": None},
            ],
        )  # fmt: skip
    upgrade(engine)
    with engine.connect() as conn:
        got = dict(conn.execute(select(assets.c.content_hash, assets.c.taken_order)).all())
        unresolved = conn.execute(select(assets.c.tz_source)).scalars().all()
    engine.dispose()
    assert got == {
        "a": datetime(2024, 7, 15, 10, 0, tzinfo=UTC),
        "b": datetime(2024, 7, 15, 12, 0, 0, 500000, tzinfo=UTC),  # floating: local as UTC
    }
    assert unresolved == [None, None]  # left for the places backfill
