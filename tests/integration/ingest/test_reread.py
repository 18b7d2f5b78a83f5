"""``import --reread``: every file is read again, changed or not, and each asset takes
what its file and sidecars say now. That is how a library catalogued by an older
version (one that read less) gets what this one reads; a date the user shifted stays
theirs, and a plain re-import still leaves every asset as first read."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from sqlalchemy import update

from photo_pipeline.db import write_session
from photo_pipeline.db.schema import assets
from photo_pipeline.jobs import JobService, JobState, LockHeld
from photo_pipeline.pipeline import timeshift
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos
from tests.integration.ingest.test_takeout_import import PARIS, takeout_json, undated_jpeg
from tests.support.import_jobs import catalogue_by_path, run_import
from tests.support.photo_jobs import run_worker

FIELDS = ("taken_source", "taken_local", "country_code", "make")


def test_a_reread_refreshes_every_asset_but_a_shifted_date(session_factory, tmp_path) -> None:
    folder = tmp_path / "photos"
    photos.jpeg(folder / "a.jpg", size=(64, 48), seed=1)
    undated_jpeg(folder / "b.jpg", 2)
    takeout_json(folder / "b.jpg.json", datetime(2019, 4, 5, 12, 34, 56, tzinfo=UTC), PARIS)
    photos.jpeg(folder / "c.jpg", size=(64, 48), seed=3, make="Fujifilm", model="X100V")
    run_import(session_factory, folder)
    service = JobService(session_factory)
    shift = timeshift.start_timeshift(service, camera="X100V", by="+1h").job
    run_worker(session_factory)
    assert service.get(shift["id"])["state"] == JobState.SUCCEEDED

    def catalogued() -> dict[str, tuple]:
        rows = catalogue_by_path(Catalog(session_factory))
        return {
            name: tuple(rows[name]["asset"][f] for f in FIELDS)
            for name in ("a.jpg", "b.jpg", "c.jpg")
        }

    read_now = catalogued()
    assert read_now == {
        "a.jpg": ("exif_original", "2023-07-14T10:15:30.123000", None, "Canon"),
        "b.jpg": ("takeout", "2019-04-05T14:34:56", "FR", "Canon"),
        "c.jpg": ("exif_original", "2023-07-14T11:15:30.123000", None, "Fujifilm"),  # shifted
    }
    # What an older version that read less would have catalogued.
    older = {"taken_source": "mtime", "taken_local": "2001-02-03T04:05:06", "country_code": None}
    with write_session(session_factory) as session:
        session.execute(update(assets).values(make=None))
        session.execute(
            update(assets).where(assets.c.taken_local != read_now["c.jpg"][1]).values(**older)
        )
    stale = catalogued()

    # A plain import reads nothing unchanged: every asset stays as it was first read.
    assert run_import(session_factory, folder)["progress"]["total"] == 0
    assert catalogued() == stale

    reread = run_import(session_factory, folder, reread=True)
    assert reread["progress"]["total"] == 4  # every file, the JSON too
    assert not reread["failed"]
    assert catalogued() == read_now  # c.jpg's camera refreshed, its shifted date kept


def test_a_reread_does_not_join_a_scan_that_reads_only_changes(session_factory, tmp_path):
    folder = tmp_path / "photos"
    photos.jpeg(folder / "a.jpg", size=(64, 48), seed=1)
    service, catalog = JobService(session_factory), Catalog(session_factory)
    [plain] = import_folders(service, catalog, [folder])  # queued, not run
    with pytest.raises(LockHeld) as refused:
        import_folders(service, catalog, [folder], reread=True)
    assert plain["id"] in refused.value.detail
    # The other way round, a plain import joins the reread: it reads more.
    run_worker(session_factory)
    [reread] = import_folders(service, catalog, [folder], reread=True)
    assert import_folders(service, catalog, [folder]) == [reread]
