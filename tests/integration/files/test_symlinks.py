"""Symlinks never lead the pipeline outside its roots (the registered sources, and
PHOTO_PIPELINE_ALLOWED_ROOTS when set): file links and chains of links are followed
only to targets inside them, folder links are not followed, a link swapped in after
the scan is refused at render, verify and serving, and an undo whose paths left the
allowed roots is refused. Nothing outside is opened, read, written or deleted: the
kernel's own record of opens (inotify) says so, and no asset or rendition is made
from an outside file."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.config import Settings
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from photo_pipeline.media import MediaError, hash_file, read_metadata
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.files import paths, roots
from photo_pipeline.pipeline.ingest.imports import import_folders
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.renditions.render import enqueue_render, render_settings
from photo_pipeline.pipeline.renditions.rows import Renditions
from photo_pipeline.pipeline.verify import start_verify, verify_report
from tests.factories import photos
from tests.support import photo_jobs
from tests.support.api_server import running_server
from tests.support.file_opens import watch_opens

SMALL = {"thumbnail_size": 64, "preview_size": 160}
OUTSIDE = "symlink_outside_roots"


def run_worker(session_factory) -> None:
    service = JobService(session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    photo_jobs.run_worker(session_factory, concurrency=2, service=service)


def settings(tmp_path: Path, db_url: str) -> Settings:
    return Settings(home=tmp_path / "home", database_url=db_url, **SMALL)


def snapshot(root: Path) -> dict[str, str]:
    """Every entry below ``root``: a file's digest, a link's target."""
    found = {}
    for folder, dirs, names in os.walk(root):
        for name in dirs + names:
            path = Path(folder) / name
            if path.is_symlink():
                found[str(path)] = "-> " + os.readlink(path)
            elif path.is_file():
                found[str(path)] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def files_of(session_factory, source: Path) -> dict[str, tuple[str, str | None]]:
    return {
        paths.from_text(f["path"]): (f["state"], f["error_code"])
        for f in Catalog(session_factory).files()
        if f["source_path"] == str(source)
    }


def asset_hashes(session_factory) -> set[str]:
    return {a["content_hash"] for a in Catalog(session_factory).assets(limit=10_000)}


def failed(service: JobService, job_id: str) -> dict[str, str]:
    return {i["item_key"]: i["error_code"] for i in service.items(job_id, states=["failed"])}


def test_file_links_are_followed_only_to_targets_inside_a_root(
    session_factory, db_url, tmp_path, monkeypatch
):
    base = tmp_path.resolve()
    src, other, allowed, outside = (base / n for n in ("photos", "other", "allowed", "outside"))
    photos.jpeg(src / "plain.jpg", size=(48, 32), seed=1)
    photos.jpeg(src / "sub/target.jpg", size=(48, 32), seed=2)
    photos.jpeg(other / "shared.jpg", size=(48, 32), seed=3)  # another registered source
    photos.jpeg(allowed / "extra.jpg", size=(48, 32), seed=4)  # an allowed root only
    secrets = [
        photos.jpeg(outside / "secret.jpg", size=(48, 32), seed=5),
        photos.jpeg(outside / "secret2.jpg", size=(48, 32), seed=6),
        photos.jpeg(outside / "album/inner.jpg", size=(48, 32), seed=7),
    ]
    (outside / "back.jpg").symlink_to(src / "sub/target.jpg")
    links = {
        "link-inside.jpg": "sub/target.jpg",
        "hop-inside.jpg": "sub/target.jpg",
        "chain-inside.jpg": "hop-inside.jpg",
        "link-to-other-source.jpg": "../other/shared.jpg",
        "link-to-allowed-root.jpg": str(allowed / "extra.jpg"),
        "via-outside.jpg": "../outside/back.jpg",  # leaves and comes back: inside
        "link-outside.jpg": str(outside / "secret.jpg"),
        "hop-outside.jpg": "../outside/secret2.jpg",
        "chain-outside.jpg": "hop-outside.jpg",
        "dotdot.jpg": "../photos/../outside/secret.jpg",
        "dangling-outside.jpg": "../outside/not-there.jpg",
        "album": "../outside/album",  # a folder link: never followed
    }
    for name, target in links.items():
        (src / name).symlink_to(target)
    monkeypatch.setenv("PHOTO_PIPELINE_ALLOWED_ROOTS", str(allowed))
    secret_hashes = {hash_file(path) for path in secrets}
    before = snapshot(outside)
    service = JobService(session_factory)

    with watch_opens(outside) as opens:
        jobs = import_folders(
            service,
            Catalog(session_factory),
            [src, other],
            follow_up=settings(tmp_path, db_url),
        )
        run_worker(session_factory)
        seen = opens.seen()

    assert [service.get(j["id"])["state"] for j in jobs] == [JobState.SUCCEEDED] * 4
    inside = ("present", None)
    refused = ("failed", OUTSIDE)
    assert files_of(session_factory, src) == {
        "plain.jpg": inside,
        "sub/target.jpg": inside,
        "link-inside.jpg": inside,
        "hop-inside.jpg": inside,
        "chain-inside.jpg": inside,
        "link-to-other-source.jpg": inside,
        "link-to-allowed-root.jpg": inside,
        "via-outside.jpg": inside,
        "link-outside.jpg": refused,
        "hop-outside.jpg": refused,
        "chain-outside.jpg": refused,
        "dotdot.jpg": refused,
        "dangling-outside.jpg": refused,
    }
    assert set(failed(service, jobs[0]["id"]).values()) == {OUTSIDE}
    hashes = asset_hashes(session_factory)
    assert hash_file(allowed / "extra.jpg") in hashes
    assert hashes.isdisjoint(secret_hashes)
    rendered = {r["asset_id"] for r in Renditions(session_factory).all()}
    assert len(rendered) == len(hashes)  # every asset rendered, and only those
    assert seen == [], "a file outside the roots was opened or read"
    assert snapshot(outside) == before
    # Refusals are remembered like any file's failure: an unchanged folder, nothing to read.
    [rescan] = import_folders(service, Catalog(session_factory), [src])
    run_worker(session_factory)
    assert service.progress(rescan["id"])["total"] == 0


def test_a_link_swapped_in_after_the_scan_is_not_read(session_factory, db_url, tmp_path):
    base = tmp_path.resolve()
    src, outside = base / "photos", base / "outside"
    photos.jpeg(src / "a.jpg", size=(48, 32), seed=1)
    photos.jpeg(src / "b.jpg", size=(48, 32), seed=2)
    secret = photos.jpeg(outside / "secret.jpg", size=(48, 32), seed=9)
    service = JobService(session_factory)
    [scan] = import_folders(service, Catalog(session_factory), [src])
    run_worker(session_factory)
    assert service.get(scan["id"])["state"] == JobState.SUCCEEDED
    ids = {paths.from_text(f["path"]): f["asset_id"] for f in Catalog(session_factory).files()}
    # Time of check (the scan) is over; now the catalogued file becomes a link out.
    (src / "a.jpg").unlink()
    (src / "a.jpg").symlink_to(secret)
    (outside / "preview.webp").write_bytes(b"RIFF not for you")
    before = snapshot(outside)
    lib_settings = settings(tmp_path, db_url)

    with watch_opens(outside) as opens:
        render = enqueue_render(service, lib_settings.home, render_settings(lib_settings)).job
        run_worker(session_factory)
        verify = start_verify(service).job
        run_worker(session_factory)
        copied = organize.start_organize(service, base / "organized", "{original_name}.{ext}").job
        run_worker(session_factory)
        with running_server(db_url, lib_settings.home, **SMALL) as api, api.client() as http:
            swapped = http.get(f"/api/assets/{ids['a.jpg']}/preview")
            kept = http.get(f"/api/assets/{ids['b.jpg']}/preview")
            # A file of the rendition store swapped for a link is not served either.
            preview = Renditions(session_factory).of_asset(ids["b.jpg"])["preview"]
            stored = lib_settings.home / preview["path"]
            stored.unlink()
            stored.symlink_to(outside / "preview.webp")
            linked = http.get(f"/api/assets/{ids['b.jpg']}/preview")
        seen = opens.seen()

    assert service.get(render["id"])["state"] == JobState.SUCCEEDED
    assert list(failed(service, render["id"]).values()) == [OUTSIDE]
    assert set(Renditions(session_factory).of_asset(ids["a.jpg"])) == set()
    assert set(Renditions(session_factory).of_asset(ids["b.jpg"])) == {"thumbnail", "preview"}
    assert service.get(copied["id"])["state"] == JobState.SUCCEEDED
    assert list(failed(service, copied["id"]).values()) == ["symlink_not_followed"]
    assert sorted(os.listdir(base / "organized")) == ["b.jpg"]
    report = verify_report(service, verify["id"])
    assert report["changed"] == []  # the secret was not hashed as the new content of a.jpg
    assert [f["path"] for f in report[OUTSIDE]] == [str(src / "a.jpg")]
    assert swapped.status_code == 404 and swapped.json()["code"] == "rendition_not_found"
    assert kept.status_code == 200 and kept.content[:3] == b"\xff\xd8\xff"  # JPEG
    assert linked.status_code == 404 and b"not for you" not in linked.content
    assert seen == [], "a file outside the roots was opened or read"
    assert snapshot(outside) == before
    assert hash_file(secret) not in asset_hashes(session_factory)


def test_a_store_folder_linked_elsewhere_is_never_written_through(
    session_factory, db_url, tmp_path
):
    base = tmp_path.resolve()
    src, outside = base / "photos", base / "outside"
    photos.jpeg(src / "a.jpg", size=(48, 32), seed=1)
    outside.mkdir()
    service = JobService(session_factory)
    import_folders(service, Catalog(session_factory), [src])
    run_worker(session_factory)
    [asset] = Catalog(session_factory).assets()
    lib_settings = settings(tmp_path, db_url)
    folder = lib_settings.home / "renditions" / asset["content_hash"][:2]
    folder.parent.mkdir(parents=True)
    folder.symlink_to(outside)

    with watch_opens(outside) as opens:
        render = enqueue_render(service, lib_settings.home, render_settings(lib_settings)).job
        run_worker(session_factory)
        seen = opens.seen()

    assert list(failed(service, render["id"]).values()) == [OUTSIDE]
    assert Renditions(session_factory).all() == []
    assert list(outside.iterdir()) == []
    assert seen == []


def test_a_pinned_original_stays_the_file_that_was_checked(tmp_path, monkeypatch):
    base = tmp_path.resolve()
    src, outside = base / "photos", base / "outside"
    original = photos.jpeg(src / "IMG_20200101_120000.jpg", size=(48, 32), seed=1, taken=None)
    secret = photos.jpeg(outside / "secret.jpg", size=(48, 32), seed=2)
    want = hash_file(original)

    # Swapped while held open: what is read is still the file that was checked, and
    # under its own name (capture times come from names).
    with roots.pinned(original, [str(src)]) as pinned:
        original.rename(src / "moved-away.jpg")
        original.symlink_to(secret)
        assert hash_file(Path(pinned.path)) == want
        # Helper programs (decoders run as subprocesses) reach the same file.
        read = [
            sys.executable,
            "-c",
            "import sys; sys.stdout.buffer.write(open(sys.argv[1], 'rb').read())",
        ]
        assert subprocess.run([*read, pinned.path], capture_output=True, check=True).stdout == (
            (src / "moved-away.jpg").read_bytes()
        )
        assert Path(pinned.path).name == original.name
        assert read_metadata(Path(pinned.path)).taken.source == "filename"
    assert not Path(pinned.path).parent.exists()

    # Swapped between the check on the name and the open: refused on the descriptor.
    original.unlink()
    (src / "moved-away.jpg").rename(original)
    check = roots.real_path_inside

    def check_then_swap(path, allowed, what="path"):
        real = check(path, allowed, what)
        Path(path).unlink()
        Path(path).symlink_to(secret)
        return real

    monkeypatch.setattr(roots, "real_path_inside", check_then_swap)
    with pytest.raises(roots.PathOutsideRoots) as refused, roots.pinned(original, [str(src)]):
        pytest.fail("opened a file outside the roots")
    assert refused.value.code == OUTSIDE
    monkeypatch.undo()

    # Errors name the original, not the stand-in.
    text = photos.text_as_jpeg(src / "notes.jpg")
    with pytest.raises(MediaError) as bad, roots.pinned(text, [str(src)]) as pinned:
        read_metadata(Path(pinned.path))
    assert str(text) in bad.value.detail and pinned.path not in bad.value.detail


# ── undo across the roots ───────────────────────────────────────────────────────
def organized(session_factory, src: Path, dest: Path, *, move: bool) -> str:
    for n in range(3):
        photos.jpeg(src / f"IMG_{n}.jpg", size=(24, 16), seed=n)
    service = JobService(session_factory)
    [scan] = import_folders(service, Catalog(session_factory), [src])
    run_worker(session_factory)
    assert service.get(scan["id"])["state"] == JobState.SUCCEEDED
    job = organize.start_organize(service, dest, organize.DEFAULT_TEMPLATE, move=move).job
    run_worker(session_factory)
    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    return job["id"]


def undo_request(db_url, tmp_path, allowed: Path, job_id: str):
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(allowed,)) as api,
        api.client() as http,
    ):
        answer = http.post(
            "/api/jobs", json={"type": "organize_undo", "params": {"job_id": job_id}}
        )
        undos = [
            j for j in api.library.service.list_jobs() if j["job_type"] == organize.UNDO_JOB_TYPE
        ]
    return answer, undos


@pytest.mark.parametrize("case", ["destination_outside", "source_outside", "folder_became_link"])
def test_undo_of_a_job_whose_paths_left_the_roots_is_refused(
    session_factory, db_url, tmp_path, case
):
    base = tmp_path.resolve()
    allowed = base / "allowed"
    allowed.mkdir()
    if case == "destination_outside":  # organized from the command line, outside
        src, dest, move = allowed / "photos", base / "elsewhere", False
    elif case == "source_outside":  # a move: its undo would write into the source
        src, dest, move = base / "photos", allowed / "organized", True
    else:  # inside then, but a folder of the destination now points outside
        src, dest, move = allowed / "photos", allowed / "organized", False
    job_id = organized(session_factory, src, dest, move=move)
    moved = base / "moved-out"
    if case == "folder_became_link":
        [year] = dest.iterdir()
        year.rename(moved)
        year.symlink_to(moved)
    before = {**snapshot(src), **snapshot(dest), **snapshot(moved)}
    assert any(not target.startswith("->") for target in before.values())

    answer, undos = undo_request(db_url, tmp_path, allowed, job_id)

    assert answer.status_code == 403, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    assert answer.json()["code"] == "path_not_allowed"
    assert undos == []
    assert {**snapshot(src), **snapshot(dest), **snapshot(moved)} == before


def test_undo_of_a_job_inside_the_roots_is_accepted(session_factory, db_url, tmp_path):
    allowed = tmp_path.resolve() / "allowed"
    job_id = organized(session_factory, allowed / "photos", allowed / "organized", move=False)
    answer, undos = undo_request(db_url, tmp_path, allowed, job_id)
    assert answer.status_code == 201, answer.text
    assert [j["id"] for j in undos] == [answer.json()["id"]]


def test_retry_of_a_job_whose_paths_left_the_roots_is_refused(session_factory, db_url, tmp_path):
    """A retry acts on the job's paths as an undo does: an organize started from the
    command line outside the roots cannot be run again through the API."""
    base = tmp_path.resolve()
    allowed = base / "allowed"
    allowed.mkdir()
    job_id = organized(session_factory, allowed / "photos", base / "elsewhere", move=False)
    with (
        running_server(db_url, tmp_path / "home", allowed_roots=(allowed,)) as api,
        api.client() as http,
    ):
        answer = http.post(f"/api/jobs/{job_id}/retry")
        state = api.library.service.get(job_id)["state"]
    assert answer.status_code == 403, answer.text
    assert answer.json()["code"] == "path_not_allowed"
    assert state == "succeeded"


def test_organize_moves_the_real_file_and_never_a_link_to_it(session_factory, db_url, tmp_path):
    """A link beside its target is an exact duplicate of it: the real file is placed
    (its name looks no less original), the link is left alone, never read through."""
    src = tmp_path.resolve() / "photos"
    real = photos.jpeg(src / "zz_real.jpg", size=(48, 32), seed=1)
    (src / "IMG_0001.jpg").symlink_to("zz_real.jpg")
    service = JobService(session_factory)
    [scan] = import_folders(service, Catalog(session_factory), [src])
    run_worker(session_factory)
    assert service.get(scan["id"])["state"] == JobState.SUCCEEDED
    digest = hash_file(real)

    dest = tmp_path / "organized"
    job = organize.start_organize(service, dest, "{original_name}.{ext}", move=True).job
    run_worker(session_factory)

    assert service.get(job["id"])["state"] == JobState.SUCCEEDED
    assert [p.name for p in dest.iterdir()] == ["zz_real.jpg"]
    assert hash_file(dest / "zz_real.jpg") == digest
    assert failed(service, job["id"]) == {}
    assert (src / "IMG_0001.jpg").is_symlink()  # left as it was
