"""The photo jobs schedules queue: a rolling ``verify --sample`` (the least recently
verified share each run, every file in turn, a changed one reported again) and
``rescan`` (every source imported again; one that is gone fails its item only)."""

from __future__ import annotations

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.rescan import start_rescan
from photo_pipeline.pipeline.verify import start_verify, verify_report
from tests.factories import photos
from tests.integration.test_verify import build, flip_one_bit
from tests.support.photo_jobs import run_worker, scan_folders


def checked(service: JobService, job_id: str) -> set[str]:
    return {item["item_key"].split(":", 1)[1] for item in service.items(job_id)}


def test_a_rolling_verify_checks_every_file_in_turn(session_factory, tmp_path):
    root = tmp_path / "photos"
    build(root)  # eight photos
    scan_folders(session_factory, root)
    service = JobService(session_factory)
    windows = []
    for _ in range(4):
        job = start_verify(service, sample=25).job
        run_worker(session_factory, "verify")
        assert service.get(job["id"])["state"] == JobState.SUCCEEDED
        windows.append(checked(service, job["id"]))
    assert [len(w) for w in windows] == [2, 2, 2, 2]
    assert len(set().union(*windows)) == 8  # four runs of a quarter: every file once

    # The oldest check comes round again; a file found changed is not stamped, so it
    # stays first in line and the next run reports it again.
    rotten = sorted(windows[0])[0]
    flip_one_bit(root / rotten)
    for _ in range(2):
        job = start_verify(service, sample=25).job
        run_worker(session_factory, "verify")
        report = verify_report(service, job["id"])
        assert [f["path"] for f in report["changed"]] == [str(root / rotten)]
        assert report["checked"] == 2


def test_a_rolling_verify_window_is_at_least_one_file(session_factory, tmp_path):
    root = tmp_path / "photos"
    build(root)
    scan_folders(session_factory, root)
    service = JobService(session_factory)
    job = start_verify(service, sample=0.5).job
    run_worker(session_factory, "verify")
    assert len(checked(service, job["id"])) == 1


def test_rescan_imports_every_source_again_and_a_missing_one_fails_its_item(
    session_factory, tmp_path, monkeypatch
):
    monkeypatch.setenv("PHOTO_PIPELINE_HOME", str(tmp_path / "home"))
    kept, gone = tmp_path / "kept", tmp_path / "gone"
    photos.jpeg(kept / "a.jpg", size=(24, 16), seed=1)
    photos.jpeg(gone / "b.jpg", size=(24, 16), seed=2)
    scan_folders(session_factory, kept, gone)
    photos.jpeg(kept / "new.jpg", size=(24, 16), seed=3)  # arrived since
    for path in gone.iterdir():
        path.unlink()
    gone.rmdir()  # an unplugged disk

    service = JobService(session_factory)
    job = start_rescan(service, idempotency_key="nightly").job
    assert start_rescan(service, idempotency_key="nightly").job["id"] == job["id"]
    run_worker(session_factory)
    items = {i["item_key"]: (i["state"], i["error_code"]) for i in service.items(job["id"])}
    sources = {s["path"]: s["id"] for s in _sources(session_factory)}
    assert items == {
        str(sources[str(kept)]): ("succeeded", None),
        str(sources[str(gone)]): ("failed", "not_a_folder"),
    }
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    paths = {f["path"] for f in Catalog(session_factory).files() if f["state"] == "present"}
    assert {"a.jpg", "new.jpg"} <= paths


def _sources(session_factory):
    from sqlalchemy import select

    from photo_pipeline.db.schema import sources

    with session_factory() as session:
        return [dict(r._mapping) for r in session.execute(select(sources))]


def test_rescan_leaves_out_a_source_a_live_watcher_keeps_current(session_factory, tmp_path):
    """The nightly rescan is for sources nobody watches: one with a live watcher lease
    is left out; once its watcher is gone (lease released), it is rescanned again."""
    from photo_pipeline.pipeline.rescan import sources_to_rescan
    from photo_pipeline.pipeline.watch.leases import Leases, Status

    watched, plain = tmp_path / "watched", tmp_path / "plain"
    photos.jpeg(watched / "a.jpg", size=(24, 16), seed=1)
    photos.jpeg(plain / "b.jpg", size=(24, 16), seed=2)
    scan_folders(session_factory, watched, plain)
    ids = {s["path"]: s["id"] for s in _sources(session_factory)}
    watcher = Leases(session_factory, "elsewhere:1:x", 3600)
    assert watcher.acquire(ids[str(watched)], Status("inotify"))
    assert sources_to_rescan(session_factory) == {ids[str(plain)]: str(plain)}
    watcher.release(ids[str(watched)])
    assert set(sources_to_rescan(session_factory)) == {ids[str(watched)], ids[str(plain)]}
