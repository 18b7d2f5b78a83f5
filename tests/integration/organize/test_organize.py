"""organize end to end on real files: plan, copy, move, undo, collisions, sidecars,
bad input, and the library lock."""

from __future__ import annotations

import contextlib
import errno
import json
import os
import subprocess
import threading
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.context import LeaseLost
from photo_pipeline.media import hash_file
from photo_pipeline.pipeline import organize
from photo_pipeline.pipeline.files import transfer
from photo_pipeline.pipeline.library.catalog import Catalog
from photo_pipeline.pipeline.library.home import MARKER
from photo_pipeline.pipeline.organize.template import TemplateError
from tests.factories import photos
from tests.support.photo_jobs import (
    TEMPLATE,
    a_scan_job_id,
    build_library,
    run_organize,
    run_worker,
    scan_folders,
    tiny_filesystem,  # noqa: F401  (fixture)
    tree,
)


def hashes(root: Path) -> set[str]:
    return {h for h, _ in tree(root).values()}


@pytest.fixture
def source(tmp_path, session_factory) -> Path:
    root = tmp_path / "photos"
    build_library(root)
    scan_folders(session_factory, root)
    return root


def plan_by_source(plan: dict, root: Path) -> dict[str, dict]:
    return {str(Path(e["source"]).relative_to(root)): e for e in plan["entries"]}


def test_plan_layout_collisions_and_sidecars(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    plan = organize.plan_organize(session_factory, dest, TEMPLATE)
    assert not dest.exists(), "a dry run touched the destination"
    entries = plan_by_source(plan, source)
    target = {k: str(Path(e["destination"]).relative_to(dest)) for k, e in entries.items()}
    assert target["card/IMG_0000.jpg"] == "2023/2023-07-14/IMG_0000.jpg"
    assert target["card/IMG_0001.jpg"] == "2023/2023-07-15/IMG_0001.jpg"
    # The RAW names the pair; its JPEG and sidecar follow it.
    assert target["card/IMG_0100.dng"] == "2023/2023-07-14/IMG_0100.dng"
    assert target["card/IMG_0100.JPG"] == "2023/2023-07-14/IMG_0100.jpg"
    assert target["card/IMG_0100.xmp"] == "2023/2023-07-14/IMG_0100.xmp"
    assert [entries[k]["kind"] for k in ("card/IMG_0100.JPG", "card/IMG_0100.xmp")] == [
        "companion",
        "sidecar",
    ]
    # Three IMG_7.jpg: one planned (the copy with its sidecar: the user's edits go
    # with it), its exact copy skipped, a different one renamed.
    sevens = {k: (target[k], entries[k]["action"], entries[k]["reason"]) for k in target}
    assert sevens["phone/IMG_7.jpg"] == ("2022/2022-01-02/IMG_7.jpg", "copy", None)
    # The sidecar's extension is lower-cased as its photo's is (.JPG -> .jpg).
    assert sevens["phone/IMG_7.AAE"] == ("2022/2022-01-02/IMG_7.aae", "copy", None)
    assert sevens["backup/IMG_7.jpg"] == ("2022/2022-01-02/IMG_7.jpg", "skip", "duplicate")
    assert sevens["other/IMG_7.jpg"] == ("2022/2022-01-02/IMG_7-2.jpg", "copy", "renamed")
    assert "notes.txt" not in entries
    assert plan["summary"]["actions"] == {"copy": 12, "skip": 1}
    assert plan["summary"]["reasons"] == {"duplicate": 1, "renamed": 1}


def test_copy_places_verified_files_and_catalogues_them(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    before = tree(source)
    plan = organize.plan_organize(session_factory, dest, TEMPLATE)
    job = run_organize(session_factory, dest)
    assert job["state"] == JobState.SUCCEEDED
    assert tree(source) == before, "copy changed an original"
    placed = tree(dest)
    for entry in plan["entries"]:
        if entry["action"] == "copy":
            relative = str(Path(entry["destination"]).relative_to(dest))
            content, mtime = placed.pop(relative)
            assert content == entry["content_hash"]
            assert mtime == before[str(Path(entry["source"]).relative_to(source))][1]
    assert placed == {}, f"unplanned files in the destination: {placed}"
    # The copies are catalogued in the destination (now a source), and rescanning
    # both finds nothing new, changed or gone among the photos.
    catalog = Catalog(session_factory)
    rows = {(f["source_path"], f["path"]): f for f in catalog.files()}
    assert rows[(str(dest), "2023/2023-07-14/IMG_0000.jpg")]["state"] == "present"
    scan_folders(session_factory, source, dest)
    after = {(f["source_path"], f["path"]): f for f in catalog.files()}
    assert {k: v["state"] for k, v in after.items() if v["asset_id"]} == {
        k: v["state"] for k, v in rows.items() if v["asset_id"]
    }
    report = organize.organize_report(session_factory, job["id"])
    assert report["states"] == {"done": 12, "skipped": 1}
    # Organizing again copies nothing: everything is already there.
    again = organize.plan_organize(session_factory, dest, TEMPLATE)
    assert again["summary"]["actions"] == {"skip": 13}
    assert again["summary"]["reasons"]["exists"] == 12


def test_move_then_undo_restores_the_tree_and_catalogue(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    before = tree(source)
    catalog = Catalog(session_factory)
    rows_before = {(f["source_path"], f["path"]): f["asset_id"] for f in catalog.files()}
    job = run_organize(session_factory, dest, move=True)
    assert job["state"] == JobState.SUCCEEDED
    left = tree(source)
    # Only what was not moved stays: the duplicate, and the file that is no photo.
    stayed = {"backup/IMG_7.jpg", "notes.txt"}
    assert set(left) == stayed
    assert hashes(dest) == {h for p, (h, _) in before.items() if p != "notes.txt"}
    # The catalogue followed the files: a rescan of the old source marks nothing missing.
    scan_folders(session_factory, source)
    assert not [f for f in catalog.files() if f["state"] == "missing"]
    assert {f["path"] for f in catalog.files() if f["source_path"] == str(dest)} >= {
        "2023/2023-07-14/IMG_0100.dng",
        "2023/2023-07-14/IMG_0100.xmp",
    }

    undo = organize.start_undo(JobService(session_factory), job["id"]).job
    assert organize.start_undo(JobService(session_factory), job["id"]).job["id"] == undo["id"]
    run_worker(session_factory, organize.UNDO_JOB_TYPE)
    assert JobService(session_factory).get(undo["id"])["state"] == JobState.SUCCEEDED
    assert tree(source) == before, "undo did not restore the original tree"
    assert tree(dest) == {}
    assert [p for p in dest.rglob("*")] == [], "undo left folders behind"
    scan_folders(session_factory, source)
    rows_after = {(f["source_path"], f["path"]): f["asset_id"] for f in catalog.files()}
    assert rows_after == rows_before
    assert not [f for f in catalog.files() if f["state"] == "missing"]


def test_existing_files_are_skipped_or_never_overwritten(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    (dest / "2023/2023-07-14").mkdir(parents=True)
    identical = dest / "2023/2023-07-14/IMG_0000.jpg"
    identical.write_bytes((source / "card/IMG_0000.jpg").read_bytes())
    stranger = dest / "2023/2023-07-15/IMG_0001.jpg"
    stranger.parent.mkdir()
    stranger.write_bytes(b"someone else's file")
    plan = plan_by_source(organize.plan_organize(session_factory, dest, TEMPLATE), source)
    assert (plan["card/IMG_0000.jpg"]["action"], plan["card/IMG_0000.jpg"]["reason"]) == (
        "skip",
        "exists",
    )
    assert plan["card/IMG_0001.jpg"]["destination"] == str(dest / "2023/2023-07-15/IMG_0001-2.jpg")
    run_organize(session_factory, dest, move=True)
    assert stranger.read_bytes() == b"someone else's file"
    assert (source / "card/IMG_0000.jpg").exists(), "a skipped file's source was removed"
    assert (
        hash_file(dest / "2023/2023-07-15/IMG_0001-2.jpg")
        == plan["card/IMG_0001.jpg"]["content_hash"]
    )


def test_a_source_changed_after_the_scan_is_not_copied(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    changed = source / "card/IMG_0002.jpg"
    changed.write_bytes(changed.read_bytes() + b"edited after the scan")
    edited = changed.read_bytes()
    job = run_organize(session_factory, dest, move=True)
    failed = JobService(session_factory).items(job["id"], states=["failed"])
    assert [(i["item_key"].split(":", 1)[1], i["error_code"]) for i in failed] == [
        ("card/IMG_0002.jpg", "content_changed")
    ]
    assert changed.read_bytes() == edited
    assert not (dest / "2023/2023-07-16/IMG_0002.jpg").exists()
    assert (dest / "2023/2023-07-16/IMG_0005.jpg").exists()
    report = organize.organize_report(session_factory, job["id"])
    assert [p["reason"] for p in report["problems"] if p["state"] == "failed"] == [
        "content_changed"
    ]


def test_disk_full_fails_items_and_leaves_no_half_files(
    session_factory, source, tmp_path, monkeypatch
):
    dest = tmp_path / "organized"
    real_write = os.write

    def full_disk(fd: int, data) -> int:
        if ".pp-organize-" in os.readlink(f"/proc/self/fd/{fd}"):
            real_write(fd, bytes(data[:7]))  # a partial write, then no space
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    real_copy = os.copy_file_range

    def full_disk_copy(src: int, dst: int, count: int, *offsets) -> int:
        if ".pp-organize-" in os.readlink(f"/proc/self/fd/{dst}"):
            real_copy(src, dst, 7, *offsets)  # a partial copy, then no space
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_copy(src, dst, count, *offsets)

    monkeypatch.setattr(os, "write", full_disk)
    monkeypatch.setattr(os, "copy_file_range", full_disk_copy)
    before = tree(source)
    job = run_organize(session_factory, dest)
    monkeypatch.undo()
    items = JobService(session_factory).items(job["id"])
    assert job["state"] == JobState.SUCCEEDED  # bad items fail, not the job
    assert {i["error_code"] for i in items} == {"disk_full"} and len(items) == 12
    assert tree(source) == before
    assert tree(dest) == {}, "a half-written or temp file was left behind"
    # With space again, organizing again places everything.
    run_organize(session_factory, dest)
    assert len(tree(dest)) == 12


def test_a_move_onto_a_small_full_filesystem_loses_nothing(
    session_factory,
    source,
    tiny_filesystem,  # noqa: F811
):
    before = tree(source)
    job = run_organize(session_factory, tiny_filesystem, move=True)
    items = JobService(session_factory).items(job["id"])
    codes = [i["error_code"] for i in items]
    assert "disk_full" in codes and None in codes, codes  # some fitted, some did not
    placed = tree(tiny_filesystem)
    assert not [p for p in placed if "/.pp-" in f"/{p}"], "a temp file was left behind"
    for item in items:
        relative = item["item_key"].split(":", 1)[1]
        if item["error_code"] is None:
            assert relative not in tree(source), f"{relative} was moved but its source stayed"
        else:
            assert tree(source)[relative] == before[relative], f"{relative} was lost"
    # Every original is in exactly one of the two places, unchanged.
    assert {h for h, _ in placed.values()} | {h for h, _ in tree(source).values()} == {
        h for h, _ in before.values()
    }


def test_bad_destinations_and_templates_are_refused(session_factory, source, tmp_path):
    service = JobService(session_factory)
    cases = {
        source / "card/organized": "destination_inside_source",
        source / "card/IMG_0000.jpg": "destination_not_a_folder",
        tmp_path: "destination_contains_source",
        tmp_path / "home": "inside_library_home",
        tmp_path / "home/quarantine/photos": "inside_library_home",
        tmp_path / "home/renditions": "inside_library_home",
    }
    (tmp_path / "home").mkdir()
    (tmp_path / "home" / MARKER).write_text("a library id")
    for dest, code in cases.items():
        with pytest.raises(organize.OrganizeError) as refused:
            organize.plan_organize(session_factory, dest, TEMPLATE)
        assert refused.value.code == code
        with pytest.raises(organize.OrganizeError):
            organize.start_organize(service, dest, TEMPLATE)
    for template, code in {
        "../{taken:%Y}/{original_name}.{ext}": "template_escapes",
        "/etc/{original_name}": "template_escapes",
        "{taken:%Y}/{nope}.{ext}": "invalid_template",
    }.items():
        with pytest.raises(TemplateError) as refused:
            organize.start_organize(service, tmp_path / "out", template)
        assert refused.value.code == code
    assert service.list_jobs() == [j for j in service.list_jobs() if j["job_type"] == "scan"]


def test_a_blocked_folder_fails_its_items_and_loses_nothing(session_factory, source, tmp_path):
    dest = tmp_path / "organized"
    dest.mkdir()
    (dest / "2022").write_text("a file where a folder is needed")
    before = tree(source)
    job = run_organize(session_factory, dest, move=True)
    failed = JobService(session_factory).items(job["id"], states=["failed"])
    assert {i["error_code"] for i in failed} == {"destination_unwritable"}
    assert {i["item_key"].split(":", 1)[1] for i in failed} == {
        "phone/IMG_7.jpg",
        "phone/IMG_7.AAE",
        "other/IMG_7.jpg",
    }
    for name in ("backup/IMG_7.jpg", "other/IMG_7.jpg", "phone/IMG_7.jpg"):
        assert tree(source)[name] == before[name]
    assert (dest / "2022").read_text() == "a file where a folder is needed"


def test_a_worker_that_lost_its_lease_cannot_write_the_journal(session_factory, tmp_path):
    service = JobService(session_factory)
    job = organize.start_organize(service, tmp_path / "a", TEMPLATE).job
    claimed = service.claim([organize.JOB_TYPE], "worker-1", lease_seconds=60)
    stale = (job["id"], claimed["fencing_token"] - 1)
    with pytest.raises(LeaseLost):
        organize.Journal(session_factory, job["id"], stale).write_plan([])
    current = (job["id"], claimed["fencing_token"])
    organize.Journal(session_factory, job["id"], current).write_plan([])


def test_a_second_organize_is_refused_naming_the_running_job(session_factory, source, tmp_path):
    service = JobService(session_factory)
    first = organize.start_organize(service, tmp_path / "a", TEMPLATE, move=True).job
    claimed = service.claim([organize.JOB_TYPE], "worker-1", lease_seconds=60)
    assert claimed["id"] == first["id"] and claimed["state"] == JobState.RUNNING
    for attempt in (
        lambda: organize.start_organize(service, tmp_path / "b", TEMPLATE).job,
        lambda: organize.start_undo(service, first["id"]).job,
    ):
        with pytest.raises(organize.LibraryBusy) as refused:
            attempt()
        assert refused.value.code == "lock_held"
        assert first["id"] in refused.value.detail
        assert [b["id"] for b in refused.value.blockers] == [first["id"]]


def test_cli_dry_run_organize_undo_and_lock_held(cli, session_factory, source, tmp_path):
    dest = str(tmp_path / "organized")
    code, out, _ = cli("organize", "--dest", dest, "--template", TEMPLATE, "--dry-run", "--json")
    assert code == 0
    assert json.loads(out) == organize.plan_organize(session_factory, dest, TEMPLATE)
    code, out, _ = cli("organize", "--dest", dest, "--template", TEMPLATE, "--dry-run")
    assert code == 0 and "12 copy" in out and "1 duplicate" in out

    code, _, err = cli("organize", "--dest", dest, "--template", "../{original_name}.{ext}")
    assert code == 2 and "template_escapes" in err
    code, _, err = cli("organize", "--dest", str(source / "card"), "--dry-run")
    assert code == 2 and "destination_inside_source" in err

    code, out, _ = cli("organize", "--dest", dest, "--template", TEMPLATE, "--move", "--json")
    queued = json.loads(out)["job"]
    code, _, err = cli("organize", "--dest", dest, "--json")
    assert code == 2 and "lock_held" in err and queued["id"] in err
    code, _, err = cli("verify")
    assert code == 2 and "lock_held" in err and queued["id"] in err

    before = tree(source)
    code, out, _ = cli("job", "wait", queued["id"], "--json")
    assert code == 0
    assert set(tree(source)) == {"backup/IMG_7.jpg", "notes.txt"}
    code, _, err = cli("organize", "--undo", "no-such-job", "--wait")
    assert code == 3 and "job_not_found" in err  # not found, as for `job show`
    code, _, err = cli("organize", "--undo", a_scan_job_id(session_factory), "--wait")
    assert code == 2 and "not_an_organize_job" in err
    # Pruning the job history keeps what an undo reads.
    code, out, _ = cli("prune", "--older-than-days", "0", "--json")
    assert code == 0 and json.loads(out)["jobs"] >= 1  # the scans, not the organize
    code, out, _ = cli("organize", "--undo", queued["id"], "--wait", "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert shown["job"]["state"] == "succeeded" and shown["report"]["states"]["undone"] == 12
    assert tree(source) == before


def test_an_undo_that_cannot_reverse_a_file_says_which_and_why(cli, source, tmp_path):
    dest = tmp_path / "organized"
    move = ("organize", "--dest", str(dest), "--template", TEMPLATE, "--move", "--wait", "--json")
    code, out, _ = cli(*move)
    assert code == 0, out
    job_id = json.loads(out)["job"]["id"]
    edited = next(dest.rglob("*.xmp"))
    edited.write_text(edited.read_text() + "<!-- edited where it now lives -->")

    code, out, err = cli("organize", "--undo", job_id, "--wait")
    assert code == 5, (out, err)  # the undo ran; one item failed
    assert "undo_failed card/IMG_0100.xmp: destination_changed" in out
    assert "skipped backup/IMG_7.jpg: duplicate of 2022/2022-01-02/IMG_7.jpg" in out
    code, out, _ = cli("organize", "--undo", job_id, "--wait", "--json")
    problems = json.loads(out)["report"]["problems"]
    undo_failed = [(p["source"], p["reason"]) for p in problems if p["state"] == "undo_failed"]
    assert undo_failed == [("card/IMG_0100.xmp", "destination_changed")]
    assert edited.exists() and not (source / "card/IMG_0100.xmp").exists()  # left as it was


def test_a_card_gone_read_only_mid_move_says_where_the_hidden_original_is(
    session_factory, tmp_path, monkeypatch
):
    """The folder turns read-only (a failing card remounted by the kernel) between the
    source's parking and its removal: neither can be finished, and the item says
    where the original is kept (its bytes are in the destination too). Once the folder
    is writable again, the next scan gives it its name back."""
    card = tmp_path / "card"
    photo = photos.jpeg(card / "IMG_1.jpg", size=(32, 24), seed=1)
    content = photo.read_bytes()
    scan_folders(session_factory, card)
    dest = tmp_path / "organized"
    mounted = subprocess.run(["mount", "--bind", str(card), str(card)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    real_lease = transfer._take_write_lease

    def go_read_only_then_lease(fd: int):
        subprocess.run(["mount", "-o", "remount,bind,ro", str(card)], check=True)
        return real_lease(fd)

    monkeypatch.setattr(transfer, "_take_write_lease", go_read_only_then_lease)
    try:
        job = run_organize(session_factory, dest, move=True, hard_links=False)
    finally:
        subprocess.run(["umount", str(card)], check=True)
    [failed] = JobService(session_factory).items(job["id"], states=["failed"])
    assert failed["error_code"] == "left_parked", failed
    [hidden] = [p for p in card.iterdir() if p.name.startswith(".pp-organize-")]
    assert hidden.name in failed["error_message"]
    assert hidden.read_bytes() == content
    assert [p.read_bytes() for p in dest.rglob("*.jpg")] == [content]
    # Writable again: the next scan gives the original its name back.
    scan_folders(session_factory, card)
    assert [(p.name, p.read_bytes()) for p in card.iterdir()] == [("IMG_1.jpg", content)]


def test_undoing_a_copy_whose_original_was_edited_keeps_the_copy_and_says_so(
    session_factory, source, tmp_path
):
    dest = tmp_path / "organized"
    job = run_organize(session_factory, dest)
    (source / "card/IMG_0100.xmp").write_text("<x:xmpmeta>edited since</x:xmpmeta>")
    service = JobService(session_factory)
    undo = organize.start_undo(service, job["id"]).job
    run_worker(session_factory, organize.UNDO_JOB_TYPE)
    [failed] = service.items(undo["id"], states=["failed"])
    assert failed["error_code"] == "source_changed"
    assert "the original changed since; the copy is kept" in failed["error_message"]
    assert len(list(dest.rglob("*.xmp"))) == 1


def test_a_move_off_a_read_only_card_copies_nothing_and_completes_once_writable(
    session_factory, tmp_path
):
    """A write-protected card or a read-only share: the source cannot be removed, so
    nothing is copied (a copy left behind would be taken for done by the next run,
    which would then never remove the source); once writable, the move completes."""
    card = tmp_path / "card"
    photo = photos.jpeg(card / "DCIM/IMG_1.jpg", size=(32, 24), seed=1)
    scan_folders(session_factory, card)
    before = tree(card)
    dest = tmp_path / "organized"
    with read_only(card):
        job = run_organize(session_factory, dest, move=True)
    failed = JobService(session_factory).items(job["id"], states=["failed"])
    assert [(i["error_code"], "nothing was copied" in i["error_message"]) for i in failed] == [
        ("source_not_removable", True)
    ]
    assert tree(card) == before
    assert not dest.exists() or not [p for p in dest.rglob("*") if p.is_file()]
    run_organize(session_factory, dest, move=True)
    assert not photo.exists()
    assert [hash_file(p) for p in dest.rglob("*.jpg")] == [before["DCIM/IMG_1.jpg"][0]]


@pytest.mark.parametrize("hard_links", [False, True], ids=["copy", "link"])
def test_copies_a_move_left_when_its_sources_went_read_only_are_finished_next_time(
    session_factory, tmp_path, monkeypatch, hard_links
):
    """Three copies are placed (or hard links made), then the card turns read-only
    before any source is removed: the entries fail and the copies stay. Writable
    again, the next move finishes those moves: the sources go, the copies are
    catalogued, nothing is left twice or uncatalogued (#28, item 8)."""
    volume = tmp_path / "volume"  # the card and the destination: one mount, links work
    card, dest = volume / "card", volume / "organized"
    for n in range(3):
        photos.jpeg(card / f"IMG_{n}.jpg", size=(32, 24), seed=n, taken="2023:07:14 10:00:00")
    scan_folders(session_factory, card)
    before = tree(card)
    mounted = subprocess.run(["mount", "--bind", str(volume), str(volume)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")

    def go_read_only() -> None:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(volume)], check=True)

    # Each move reaches the removal of its source once its copy is in place: when all
    # three have, the card goes read-only under them.
    all_placed = threading.Barrier(3, action=go_read_only, timeout=60)
    real_retire = transfer.retire

    def retire_once_all_are_placed(*args, **kwargs):
        all_placed.wait()
        return real_retire(*args, **kwargs)

    monkeypatch.setattr(transfer, "retire", retire_once_all_are_placed)
    try:
        first = run_organize(session_factory, dest, move=True, hard_links=hard_links)
    finally:
        subprocess.run(["umount", str(volume)], check=True)
    monkeypatch.setattr(transfer, "retire", real_retire)
    service = JobService(session_factory)
    failed = service.items(first["id"], states=["failed"])
    assert [i["error_code"] for i in failed] == ["source_not_removable"] * 3
    assert tree(card) == before
    left = {p.name: p for p in dest.rglob("*.jpg")}
    assert {hash_file(p) for p in left.values()} == {h for h, _ in before.values()}
    if hard_links:  # the copies are the sources' own inodes
        assert {p.stat().st_ino for p in left.values()} == {
            (card / name).stat().st_ino for name in left
        }

    second = run_organize(session_factory, dest, move=True, hard_links=hard_links)
    assert second["state"] == JobState.SUCCEEDED
    assert not service.items(second["id"], states=["failed"])
    report = organize.organize_report(session_factory, second["id"])
    assert report["states"] == {"done": 3}
    assert not [p for p in card.rglob("*") if p.is_file()], "a source stayed"
    assert sorted(h for h, _ in tree(dest).values()) == sorted(h for h, _ in before.values())
    # Every file of the destination is catalogued there, and nothing at the card.
    rows = Catalog(session_factory).files()
    at_dest = {r["path"] for r in rows if r["source_path"] == str(dest) and r["asset_id"]}
    assert at_dest == {str(p.relative_to(dest)) for p in dest.rglob("*.jpg")}
    assert not [r for r in rows if r["source_path"] == str(card) and r["state"] != "missing"]


@contextlib.contextmanager
def read_only(folder: Path):
    """``folder`` on a read-only bind mount of itself (root only, as on a card)."""
    mounted = subprocess.run(["mount", "--bind", str(folder), str(folder)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot bind-mount here: {mounted.stderr.decode().strip()}")
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(folder)], check=True)
        yield
    finally:
        subprocess.run(["umount", str(folder)], check=True)
