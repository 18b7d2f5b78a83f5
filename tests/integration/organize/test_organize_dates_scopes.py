"""organize on real files (#30): undated files (only an mtime) go to undated/ in their
folder of the source, the plan says where each date came from and counts the undated
ones (the plan, the CLI's text and --json, the API), a scope of sources and days
limits the plan and the job, and a destination that is a source is refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobState
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.scope import ScopeError
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.cli_processes import run_command
from tests.support.photo_jobs import run_organize, scan_folders, tree


@pytest.fixture
def sources(tmp_path, session_factory) -> tuple[Path, Path]:
    """Two sources: ``a`` with photos dated by the camera and by a file name, and an
    undated one (no EXIF date, no date in its name) with its .AAE; ``b`` with one photo."""
    a, b = tmp_path / "a", tmp_path / "b"
    photos.jpeg(a / "card/IMG_0001.jpg", size=(32, 24), seed=1)  # 2023-07-14 10:15:30
    photos.jpeg(a / "card/IMG_0002.jpg", size=(32, 24), seed=2, taken="2023:07:20 08:00:00")
    photos.jpeg(a / "phone/20230716_101530.jpg", size=(32, 24), seed=3, taken=None)
    photos.jpeg(a / "roll/2019/IMG_0300.jpg", size=(32, 24), seed=4, taken=None)
    (a / "roll/2019/IMG_0300.AAE").write_text("<plist>an edit</plist>")
    photos.jpeg(b / "IMG_0009.jpg", size=(32, 24), seed=9, taken="2023:07:15 09:00:00")
    scan_folders(session_factory, a, b)
    return a, b


def relative_plan(plan: dict, dest: Path) -> dict[str, dict]:
    return {
        Path(e["source"]).name: {**e, "to": Path(e["destination"]).relative_to(dest).as_posix()}
        for e in plan["entries"]
    }


def test_undated_files_go_to_undated_in_their_folder_and_the_plan_says_why(
    session_factory, sources, tmp_path
):
    dest = tmp_path / "organized"
    plan = organize.plan_organize(session_factory, dest)  # the default template
    entries = relative_plan(plan, dest)
    assert entries["IMG_0300.jpg"]["to"] == "undated/roll/2019/IMG_0300.jpg"
    # Its sidecar follows it, its extension spelled as the photo's (lower case).
    assert entries["IMG_0300.AAE"]["to"] == "undated/roll/2019/IMG_0300.aae"
    assert entries["IMG_0001.jpg"]["to"] == "2023/2023-07-14/20230714_101530_IMG_0001.jpg"
    assert entries["20230716_101530.jpg"]["to"] == (
        "2023/2023-07-16/20230716_101530_20230716_101530.jpg"
    )
    facts = {
        name: (e["date_source"], e["date_confidence"], e["undated"]) for name, e in entries.items()
    }
    assert facts == {
        "IMG_0001.jpg": ("exif_original", "camera", False),
        "IMG_0002.jpg": ("exif_original", "camera", False),
        "20230716_101530.jpg": ("filename", "filename", False),
        "IMG_0300.jpg": ("mtime", "file_time", True),
        "IMG_0300.AAE": ("mtime", "file_time", True),  # its photo's date
        "IMG_0009.jpg": ("exif_original", "camera", False),
    }
    summary = plan["summary"]
    assert summary["undated"] == 1  # photos, not their sidecars
    assert summary["undated_fallback"] is True
    assert summary["date_confidence"] == {"camera": 3, "filename": 1, "file_time": 1}
    # A template without a fallback files it by its mtime, and the summary says so.
    plain = organize.plan_organize(session_factory, dest, "{taken:%Y}/{original_name}.{ext}")
    assert plain["summary"]["undated"] == 1
    assert plain["summary"]["undated_fallback"] is False
    # A real run places it where the plan said.
    assert run_organize(session_factory, dest, template=organize.DEFAULT_TEMPLATE)["state"] == (
        JobState.SUCCEEDED
    )
    assert "undated/roll/2019/IMG_0300.jpg" in tree(dest)


def test_the_cli_plan_shows_date_sources_and_counts_the_undated(db_url, sources, tmp_path):
    dest = tmp_path / "organized"
    home = tmp_path / "home"
    text = run_command(db_url, home, "organize", "--dest", str(dest), "--dry-run")
    assert text.returncode == 0, text.stderr
    assert "1 photo undated" in text.stdout
    assert "dates: 3 from the camera, 1 from the file name, 1 undated (file mtime)" in text.stdout
    assert "date from" in text.stdout
    as_json = run_command(db_url, home, "organize", "--dest", str(dest), "--dry-run", "--json")
    plan = json.loads(as_json.stdout)
    assert plan["summary"]["undated"] == 1
    by_name = {Path(e["source"]).name: e for e in plan["entries"]}
    assert by_name["IMG_0300.jpg"]["date_source"] == "mtime"
    assert by_name["IMG_0300.jpg"]["destination"].endswith("/undated/roll/2019/IMG_0300.jpg")


def test_a_scope_limits_the_plan_and_the_job(session_factory, sources, tmp_path):
    a, b = sources
    dest = tmp_path / "organized"
    by_path = {Path(p): i for i, p in _source_ids(session_factory).items()}

    def planned(**scope) -> set[str]:
        return {
            Path(e["source"]).name
            for e in organize.plan_organize(session_factory, dest, **scope)["entries"]
        }

    assert planned(sources=[str(b)]) == {"IMG_0009.jpg"}
    assert planned(sources=[str(by_path[a])]) == {
        "IMG_0001.jpg",
        "IMG_0002.jpg",
        "20230716_101530.jpg",
        "IMG_0300.jpg",
        "IMG_0300.AAE",
    }
    # Capture days, local calendar, both ends included.
    assert planned(since="2023-07-15", until="2023-07-16") == {
        "20230716_101530.jpg",
        "IMG_0009.jpg",
    }
    assert planned(sources=[str(a)], since="2023-07-16", until="2023-07-20") == {
        "20230716_101530.jpg",
        "IMG_0002.jpg",
    }
    for bad, code in [
        ({"sources": [str(a / "card")]}, "source_not_registered"),  # inside one, not one
        ({"sources": ["999"]}, "source_not_registered"),
        ({"sources": ["²"]}, "source_not_registered"),  # a digit to str.isdigit, not to int
        ({"since": "2023-13-01"}, "invalid_date"),
        ({"since": "2023-07-20", "until": "2023-07-01"}, "invalid_date_range"),
    ]:
        with pytest.raises(ScopeError) as refused:
            organize.plan_organize(session_factory, dest, **bad)
        assert refused.value.code == code
    # The job covers the scope only.
    job = run_organize(session_factory, dest, sources=[str(b)])
    assert job["state"] == JobState.SUCCEEDED
    assert job["params"]["sources"] == [by_path[b]]
    assert [Path(p).name for p in tree(dest)] == ["IMG_0009.jpg"]


def _source_ids(session_factory) -> dict[int, str]:
    return {f["source_id"]: f["source_path"] for f in Catalog(session_factory).files()}


def test_a_destination_that_is_a_source_is_refused(session_factory, sources, db_url, tmp_path):
    a, _ = sources
    with pytest.raises(organize.OrganizeError) as refused:
        organize.plan_organize(session_factory, a)
    assert refused.value.code == "destination_is_source"
    cli = run_command(db_url, tmp_path / "home", "organize", "--dest", str(a), "--dry-run")
    assert cli.returncode == 2
    assert "destination_is_source" in cli.stderr
    # An earlier organize's destination (registered as a source by it) is no such source.
    dest = tmp_path / "organized"
    assert run_organize(session_factory, dest, sources=[str(a)])["state"] == JobState.SUCCEEDED
    again = organize.plan_organize(session_factory, dest)
    assert again["summary"]["actions"].get("copy") == 1  # b's photo, still to place


def test_the_api_plans_and_starts_a_scoped_organize(db_url, sources, tmp_path):
    _, b = sources
    dest = tmp_path / "organized"
    with running_server(db_url, tmp_path / "home") as server, server.client() as client:
        answer = client.post("/api/organize/plan", json={"dest": str(dest), "sources": [str(b)]})
        assert answer.status_code == 200, answer.text
        plan = answer.json()
        assert plan["scope"]["sources"] and plan["summary"]["undated"] == 0
        assert [e["date_source"] for e in plan["entries"]] == ["exif_original"]
        whole = client.post("/api/organize/plan", json={"dest": str(dest)}).json()
        assert whole["summary"]["undated"] == 1
        refused = client.post(
            "/api/organize/plan", json={"dest": str(dest), "sources": [str(tmp_path)]}
        )
        assert refused.status_code == 422
        assert refused.headers["content-type"].startswith("application/problem+json")
        assert refused.json()["code"] == "source_not_registered"
        bad_day = client.post("/api/organize/plan", json={"dest": str(dest), "since": "July"})
        assert bad_day.status_code == 422
        job = client.post(
            "/api/jobs",
            json={"type": "organize", "params": {"dest": str(dest), "sources": [str(b)]}},
        )
        assert job.status_code in (200, 201), job.text
        assert job.json()["params"]["sources"] == plan["scope"]["sources"]
        is_source = client.post("/api/organize/plan", json={"dest": str(b)})
        assert is_source.status_code == 422
        assert is_source.json()["code"] == "destination_is_source"


def test_templates_name_cameras_as_the_library_shows_them(session_factory, tmp_path):
    """{make}/{model} use the display names (media.camera_names): one spelling per
    vendor, the make not repeated in the model, no NUL padding."""
    src = tmp_path / "src"
    photos.jpeg(src / "a.jpg", size=(32, 24), seed=1, make="NIKON CORPORATION", model="NIKON D70")
    photos.jpeg(src / "b.jpg", size=(32, 24), seed=2, make="Canon", model="Canon DIGITAL IXUS")
    scan_folders(session_factory, src)
    dest = tmp_path / "organized"
    plan = organize.plan_organize(session_factory, dest, "{make}/{model}/{original_name}.{ext}")
    assert {e["to"] for e in relative_plan(plan, dest).values()} == {
        "Nikon/D70/a.jpg",
        "Canon/DIGITAL IXUS/b.jpg",
    }
