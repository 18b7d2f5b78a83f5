"""Which folders a scan lists: every file once, whatever folders are registered; never
the library's own files, a NAS's or a recycle bin's; an unreadable folder said so."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.db import open_database
from photo_pipeline.jobs import JobService
from photo_pipeline.pipeline.ingest.imports import InsideLibraryHome, PathNotUtf8, import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.home import MARKER
from tests.factories import photos
from tests.support.api_server import running_server
from tests.support.import_jobs import import_and_run, run_import, settings_for

REPO = Path(__file__).resolve().parents[3]


def catalogued(session_factory) -> list[tuple[str, str, str]]:
    """(source, path, state) of every file row."""
    return sorted(
        (f["source_path"], f["path"], f["state"]) for f in Catalog(session_factory).files()
    )


def test_a_folder_inside_a_registered_one_is_scanned_as_part_of_it(session_factory, tmp_path):
    root = tmp_path / "photos"
    photos.jpeg(root / "a.jpg", size=(32, 24), seed=1)
    photos.jpeg(root / "2023/b.jpg", size=(32, 24), seed=2)
    run_import(session_factory, root)
    photos.jpeg(root / "2023/c.jpg", size=(32, 24), seed=3)
    outcome = run_import(session_factory, root / "2023")
    assert outcome["job"]["params"]["sources"][0]["path"] == str(root)
    assert Catalog(session_factory).source_paths() == [str(root)]
    assert catalogued(session_factory) == [
        (str(root), "2023/b.jpg", "present"),
        (str(root), "2023/c.jpg", "present"),
        (str(root), "a.jpg", "present"),
    ]
    assert Catalog(session_factory).duplicates() == []


def test_a_folder_holding_registered_ones_leaves_their_files_to_them(session_factory, tmp_path):
    root = tmp_path / "photos"
    photos.jpeg(root / "a.jpg", size=(32, 24), seed=1)
    photos.jpeg(root / "2023/b.jpg", size=(32, 24), seed=2)
    run_import(session_factory, root / "2023")
    outcome = run_import(session_factory, root)
    assert outcome["progress"]["total"] == 1  # a.jpg alone
    assert catalogued(session_factory) == [
        (str(root), "a.jpg", "present"),
        (str(root / "2023"), "b.jpg", "present"),
    ]
    assert Catalog(session_factory).duplicates() == []


def test_the_api_imports_no_folder_whose_registered_holder_is_outside_the_roots(
    session_factory, db_url, tmp_path
):
    root = tmp_path.resolve() / "photos"
    allowed = root / "2023"
    photos.jpeg(allowed / "b.jpg", size=(32, 24), seed=2)
    (tmp_path / "elsewhere").mkdir()
    run_import(session_factory, root)  # from the command line: the whole folder
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(allowed,)) as api,
        api.client() as http,
    ):
        refused = http.post(
            "/api/jobs", json={"type": "import", "params": {"paths": [str(allowed)]}}
        )
        scans = [j for j in api.library.service.list_jobs() if j["job_type"] == "scan"]
    assert refused.status_code == 403, refused.text
    assert refused.json()["code"] == "path_not_allowed"
    assert str(root) in refused.json()["detail"]
    assert len(scans) == 1  # the command line's


def test_files_an_older_version_catalogued_twice_leave_the_outer_folder(session_factory, tmp_path):
    """A library whose outer folder catalogued the inner one's files too (registered
    before this version) is mended by the outer folder's next scan."""
    root = tmp_path / "photos"
    photos.jpeg(root / "2023/b.jpg", size=(32, 24), seed=2)
    run_import(session_factory, root)
    Catalog(session_factory).add_source(root / "2023")  # as an older import did
    run_import(session_factory, root / "2023")  # scans the inner folder: it is registered
    run_import(session_factory, root)
    assert catalogued(session_factory) == [
        (str(root), "2023/b.jpg", "missing"),
        (str(root / "2023"), "b.jpg", "present"),
    ]
    assert Catalog(session_factory).duplicates() == []


def test_the_library_home_is_never_imported(session_factory, db_url, tmp_path):
    """The README's layout: the home inside the folder of photos. Its renditions are
    no photos, and the home itself, or a folder of its own files, is refused; a
    folder of photos kept in the home is the user's."""
    root = tmp_path / "photos"
    home = root / "library"
    home.mkdir(parents=True)
    (home / MARKER).write_text("library id")
    photos.jpeg(root / "a.jpg", size=(320, 240), seed=1)
    photos.jpeg(home / "mine/b.jpg", size=(320, 240), seed=2)
    settings = settings_for(home, db_url)
    jobs = import_and_run(session_factory, root, settings)
    assert [job["state"] for job in jobs] == ["succeeded"] * 3
    assert list((home / "renditions").rglob("*.webp")), "the import made renditions"
    import_and_run(session_factory, root, settings)  # the renditions are there now
    assert catalogued(session_factory) == [
        (str(root), "a.jpg", "present"),
        (str(root), "library/mine/b.jpg", "present"),
    ]
    for inside in (home, home / "renditions"):
        with pytest.raises(InsideLibraryHome):
            import_folders(
                JobService(session_factory), Catalog(session_factory), [inside], follow_up=settings
            )


def test_nas_recycle_bin_and_preview_folders_are_not_photos(session_factory, tmp_path):
    root = tmp_path / "share"
    photos.jpeg(root / "IMG_1.JPG", size=(32, 24), seed=1)
    for system in (
        "@eaDir/IMG_1.JPG/SYNOFILE_THUMB_XL.jpg",
        "#recycle/old.jpg",
        "#snapshot/GMT+01_2024-01-01/IMG_1.JPG",
        "$RECYCLE.BIN/S-1-5-21/$RABC123.JPG",
        "@Recycle/old.jpg",
        "System Volume Information/x.jpg",
        "Lightroom Catalog Previews.lrdata/0/01/x.lrprev.jpg",
    ):
        photos.jpeg(root / system, size=(32, 24), seed=2)
    outcome = run_import(session_factory, root)
    assert outcome["failed"] == {}
    assert catalogued(session_factory) == [(str(root), "IMG_1.JPG", "present")]


@pytest.mark.skipif(
    os.geteuid() == 0 and shutil.which("setpriv") is None,
    reason="root lists every folder, and setpriv (util-linux) is missing to drop that",
)
def test_an_unreadable_folder_fails_its_item_and_its_files_stay_catalogued(tmp_path):
    """Run as a command, as root without the capabilities that ignore permissions."""
    root = tmp_path / "photos"
    photos.jpeg(root / "ok/a.jpg", size=(32, 24), seed=1)
    photos.jpeg(root / "locked/b.jpg", size=(32, 24), seed=3)
    env = {
        **os.environ,
        "PHOTO_PIPELINE_HOME": str(tmp_path / "home"),
        "PHOTO_PIPELINE_DATABASE_URL": f"sqlite:///{tmp_path / 'library.db'}",
    }
    without_override = (
        ["setpriv", "--inh-caps=-dac_override,-dac_read_search",
         "--bounding-set=-dac_override,-dac_read_search"]
        if os.geteuid() == 0 else []
    )  # fmt: skip

    def import_() -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*without_override, sys.executable, "-m", "photo_pipeline", "import", str(root),
             "--wait"],
            env=env, cwd=REPO, capture_output=True, text=True, timeout=240,
        )  # fmt: skip

    first = import_()
    assert first.returncode == 0, first.stderr
    (root / "locked").chmod(0)
    try:
        again = import_()
    finally:
        (root / "locked").chmod(0o755)
    assert again.returncode == 5, again.stdout + again.stderr  # an item failed
    shown = subprocess.run(
        [sys.executable, "-m", "photo_pipeline", "jobs", "--json"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert "unreadable_folder" in again.stdout + again.stderr + shown.stdout
    # b.jpg could not be looked at: it is not gone.
    library = open_database(env["PHOTO_PIPELINE_DATABASE_URL"])
    assert [(path, state) for _, path, state in catalogued(library)] == [
        ("locked", "failed"),
        ("locked/b.jpg", "present"),
        ("ok/a.jpg", "present"),
    ]


def test_a_folder_whose_own_name_is_not_utf8_is_refused_clearly(session_factory, tmp_path):
    """Its path is stored as text; the folder that holds it imports it instead."""
    root = tmp_path / "share"
    latin1 = Path(os.fsdecode(bytes(root) + b"/caf\xe9"))
    photos.jpeg(latin1 / "a.jpg", size=(32, 24), seed=1)
    with pytest.raises(PathNotUtf8, match="import the folder that holds it"):
        import_folders(JobService(session_factory), Catalog(session_factory), [latin1])
    run_import(session_factory, root)
    assert run_import(session_factory, latin1)["job"]["params"]["sources"][0]["path"] == str(root)
    assert [path for _, path, _ in catalogued(session_factory)] == ["%bytes:caf%E9/a.jpg"]
