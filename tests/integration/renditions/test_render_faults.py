"""render on a full disk: the renditions that do not fit fail as items, the import
chain goes on, and once there is space again a render finishes the library. (The
scan renders new photos itself: those whose renditions do not fit are catalogued all
the same and left to the render job.)"""

from __future__ import annotations

import subprocess

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings
from photo_pipeline.pipeline.renditions.rows import Renditions
from tests.factories import photos
from tests.support.import_jobs import import_and_run, run_worker_retrying_at_once, settings_for
from tests.support.photo_jobs import tiny_filesystem  # noqa: F401  (fixture)


def test_a_full_disk_fails_renditions_not_the_job(
    session_factory,
    db_url,
    tmp_path,
    tiny_filesystem,  # noqa: F811
):
    root, home = tmp_path / "photos", tiny_filesystem
    for n in range(12):
        photos.jpeg(root / f"{n}.jpg", size=(320, 240), seed=n)
    settings = settings_for(home, db_url)

    scan_job, render_job, similar_job = import_and_run(session_factory, root, settings)

    service = JobService(session_factory)
    assert [j["state"] for j in (scan_job, render_job, similar_job)] == [JobState.SUCCEEDED] * 3
    assert service.progress(scan_job["id"])["by_state"] == {"succeeded": 12}
    codes = [i["error_code"] for i in service.items(render_job["id"])]
    assert codes and set(codes) == {"disk_full"}, codes  # what the scan could not store
    rendered = {r["asset_id"] for r in Renditions(session_factory).all()}
    assert rendered, "nothing fitted"
    assert len(rendered) + len(codes) == 12, "a row without its files, or files without a row"
    for row in Renditions(session_factory).all():
        assert (home / row["path"]).stat().st_size == row["bytes"]
    leftovers = [p for p in home.rglob("*") if p.name.startswith(".")]
    assert leftovers == [], "a partial rendition was left behind"

    # Space again: a render renders what is missing, and only that.
    subprocess.run(["mount", "-o", "remount,size=4m", str(home)], check=True)
    again = enqueue_render(service, home, render_settings(settings)).job
    run_worker_retrying_at_once(session_factory)
    assert service.get(again["id"])["state"] == JobState.SUCCEEDED
    assert service.progress(again["id"])["by_state"] == {"succeeded": codes.count("disk_full")}
    assert len({r["asset_id"] for r in Renditions(session_factory).all()}) == 12
