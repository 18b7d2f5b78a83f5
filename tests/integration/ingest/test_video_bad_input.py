"""Bad videos through the real jobs: each fails its own item with a clear code within
its time limit, and the scan and render jobs succeed with the good ones done."""

from __future__ import annotations

import shutil
import time

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.handlers import registry
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from photo_pipeline.media import metadata as metadata_module
from photo_pipeline.media import poster as poster_module
from photo_pipeline.media.render import RenderSettings
from photo_pipeline.pipeline.ingest import scan
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions import render
from tests.factories import videos

# seconds: the per-item limit of these jobs; a good clip's probe and poster must fit in
# it on a loaded 2-core machine, a hanging one is killed at it
LIMIT = 6.0


def _hang(*args):
    time.sleep(600)  # a decoder stuck in C, as far as the watchdog can tell


def run(service, session_factory) -> None:
    config = WorkerConfig(burst=True, concurrency=2, executor="thread", poll_seconds=0.05)
    Worker(service, WorkerRegistry(session_factory), registry, config).run()


def test_each_bad_video_fails_its_item_and_the_jobs_succeed(session_factory, tmp_path, monkeypatch):
    root = tmp_path / "clips"
    root.mkdir()
    videos.h264_mp4(root / "good.mp4", seed=1)
    shutil.copy(videos.h264_mp4(tmp_path / "other.mp4", seed=2), root / "stuck_poster.mp4")
    shutil.copy(videos.h264_mp4(tmp_path / "third.mp4", seed=3), root / "hangs.mp4")
    videos.truncated_mp4(root / "truncated.mp4")
    (root / "empty.mp4").write_bytes(b"")
    videos.huge_dimensions(root / "huge.avi", size=(100_000, 100_000))
    videos.sparse(root / "sparse.mp4", size=4 << 30)

    real_probe = metadata_module.probe_video
    monkeypatch.setattr(
        metadata_module,
        "probe_video",
        lambda kind, fp, path, *rest: (_hang if path.name == "hangs.mp4" else real_probe)(
            kind, fp, path, *rest
        ),
    )
    real_decode = poster_module.decode_poster
    monkeypatch.setattr(
        poster_module,
        "decode_poster",
        lambda path, *rest: (_hang if path.endswith("stuck_poster.mp4") else real_decode)(
            path, *rest
        ),
    )

    service = JobService(session_factory)
    catalog = Catalog(session_factory)
    [source] = [catalog.add_source(root)]
    scan_job = service.enqueue(
        scan.JOB_TYPE,
        lock=scan.lock_for(source["id"]),
        params={
            "sources": [{"id": source["id"], "path": source["path"]}],
            "video_time_limit": LIMIT,
        },
    )
    render_job = render.enqueue_render(
        service,
        tmp_path / "home",
        RenderSettings(thumbnail_size=32, preview_size=64, video_time_limit=LIMIT),
        prerequisites=[scan_job["id"]],
    ).job
    run(service, session_factory)

    assert service.get(scan_job["id"])["state"] == JobState.SUCCEEDED
    scan_failed = {
        i["item_key"].split(":", 1)[1]: (i["error_code"], i["error_message"])
        for i in service.items(scan_job["id"], states=["failed"])
    }
    assert {name: code for name, (code, _) in scan_failed.items()} == {
        "hangs.mp4": "decode_timeout",
        "truncated.mp4": "corrupt_file",
        "empty.mp4": "empty_file",
        "huge.avi": "corrupt_file",
        "sparse.mp4": "corrupt_file",
    }
    for name, (_, message) in scan_failed.items():
        assert name in message, message  # the message names the file
    assert "frame size" in scan_failed["huge.avi"][1]

    assert service.get(render_job["id"])["state"] == JobState.SUCCEEDED
    render_failed = [
        (i["item_key"].rsplit("/", 1)[1], i["error_code"])
        for i in service.items(render_job["id"], states=["failed"])
    ]
    assert render_failed == [("stuck_poster.mp4", "decode_timeout")]
    assert service.progress(render_job["id"])["by_state"]["succeeded"] == 1  # good.mp4
