"""An import run again while its chain is still queued joins that chain, render and
similar included, as it joins the scan (#28, item 7); once the chain has finished, an
import queues a new one, which renders what is new."""

from __future__ import annotations

import json
from collections import Counter

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.pipeline.renditions.rows import Renditions
from tests.factories import photos


def chain(out: str) -> list[tuple[str, str]]:
    return [(job["job_type"], job["id"]) for job in json.loads(out)]


def test_imports_run_again_join_the_queued_chain(cli, session_factory, tmp_path):
    folder = tmp_path / "photos"
    photos.jpeg(folder / "a.jpg", size=(64, 48), seed=1)
    outputs = []
    for _ in range(3):  # no worker runs: the chain stays queued
        code, out, err = cli("import", str(folder), "--json")
        assert code == 0, err
        outputs.append(chain(out))
    assert [job_type for job_type, _ in outputs[0]] == ["scan", "render", "similar"]
    assert outputs[1] == outputs[0] and outputs[2] == outputs[0]
    service = JobService(session_factory)
    queued = Counter(job["job_type"] for job in service.list_jobs())
    assert queued == {"scan": 1, "render": 1, "similar": 1}

    # Run to its end, the chain is done with: the next import queues a new one, and
    # its render renders the photo added since.
    code, out, err = cli("import", str(folder), "--wait", "--json")
    assert code == 0, err
    assert chain(out) == outputs[0]
    assert {job["state"] for job in json.loads(out)} == {JobState.SUCCEEDED}
    photos.jpeg(folder / "b.jpg", size=(64, 48), seed=2)
    code, out, err = cli("import", str(folder), "--wait", "--json")
    assert code == 0, err
    later = chain(out)
    assert [job_type for job_type, _ in later] == ["scan", "render", "similar"]
    assert not {job_id for _, job_id in later} & {job_id for _, job_id in outputs[0]}
    assert {job["state"] for job in json.loads(out)} == {JobState.SUCCEEDED}
    assert len(Renditions(session_factory).all()) == 2 * 2  # thumbnail and preview each


def test_an_import_joins_the_render_of_its_very_scans_only(cli, session_factory, tmp_path):
    """The render joined is the one after exactly the import's scans: an import that
    adds another folder's scan to a joined one needs a render after both."""
    first, second = tmp_path / "first", tmp_path / "second"
    photos.jpeg(first / "a.jpg", size=(64, 48), seed=1)
    photos.jpeg(second / "b.jpg", size=(64, 48), seed=2)
    code, out, err = cli("import", str(first), "--json")
    assert code == 0, err
    alone = dict(chain(out))
    code, out, err = cli("import", str(first), "--json")
    assert code == 0, err
    assert dict(chain(out)) == alone
    code, out, err = cli("import", str(first), str(second), "--json")
    assert code == 0, err
    scans = [job_id for job_type, job_id in chain(out) if job_type == "scan"]
    both = dict(chain(out))
    assert alone["scan"] in scans and len(scans) == 2
    assert both["render"] != alone["render"] and both["similar"] != alone["similar"]
    service = JobService(session_factory)
    assert sorted(service.prerequisites([both["render"]])[both["render"]]) == sorted(scans)
