"""dedupe end to end on real files (#16): the plan and why each keeper won, the
quarantine, undo, purge, the checks that never lose the last copy, and the CLI."""

from __future__ import annotations

import errno
import json
import os
from collections import Counter
from pathlib import Path

import pytest

import photo_pipeline.pipeline.job_types  # noqa: F401  (registers the photo job types)
from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.context import LeaseLost
from photo_pipeline.pipeline import dedupe, organize
from photo_pipeline.pipeline.dedupe.plan import annotate_exact_groups, exact_keepers
from photo_pipeline.pipeline.files import transfer
from photo_pipeline.pipeline.library.browse import Browser
from photo_pipeline.pipeline.library.catalog import Catalog
from tests.factories import photos, videos
from tests.support.dedupe_library import (  # noqa: F401
    digests,
    library_fixture,
    same_bytes,
    sha256_tree,
    stamp,
)
from tests.support.paused_worker import take_over, worker_stopped_at
from tests.support.photo_jobs import (
    a_scan_job_id,
    run_worker,
    scan_folders,
    tiny_filesystem,  # noqa: F401  (fixture)
)

TYPES = (dedupe.JOB_TYPE, dedupe.UNDO_JOB_TYPE, dedupe.PURGE_JOB_TYPE)


def run(session_factory, job: dict) -> dict:
    run_worker(session_factory, *TYPES)
    return JobService(session_factory).get(job["id"])


def test_the_plan_keeps_one_copy_and_says_why(session_factory, library):
    plan = dedupe.plan_dedupe(session_factory)
    by_keeper = {Path(g["keeper"]).relative_to(library).as_posix(): g for g in plan["groups"]}
    assert by_keeper["card/IMG_0001.jpg"]["reason"] == "oldest"
    # copy_IMG_0002.jpg is older, and loses to the original-looking name.
    assert by_keeper["card/IMG_0002.jpg"]["reason"] == "original_name"
    # The pair's JPEG stays with its RAW and sidecar; the lone older copy goes.
    pair = by_keeper["camera-card/IMG_0100.JPG"]
    assert pair["reason"] == "keeps_pair"
    assert [Path(q["path"]).relative_to(library).as_posix() for q in pair["quarantine"]] == [
        "b/IMG_0100.JPG"
    ]
    # The renamed copy's own sidecar travels with it.
    renamed = by_keeper["card/IMG_0200.jpg"]
    assert sorted(Path(q["path"]).name for q in renamed["quarantine"]) == [
        "IMG_0200 copy.jpg",
        "IMG_0200 copy.xmp",
    ]
    assert all(g["kind"] == "exact" for g in plan["groups"]), "near groups need --near"
    # 1+2+3+4 copies of IMG_000n, the pair's lone copy, the renamed copy + sidecar.
    assert plan["summary"]["files"] == 10 + 1 + 2
    assert plan["summary"]["bytes"] == sum(
        q["size"] for g in plan["groups"] for q in g["quarantine"]
    )
    near = dedupe.plan_dedupe(session_factory, near=True)
    near_groups = [g for g in near["groups"] if g["kind"] == "near"]
    # Only the group with a decision; never the other one by default.
    assert [(Path(g["keeper"]).name, g["reason"]) for g in near_groups] == [
        ("IMG_300.jpg", "decision")
    ]
    assert [Path(q["path"]).name for q in near_groups[0]["quarantine"]] == ["IMG_300_small.jpg"]
    # The duplicates listing suggests the same keeper, first.
    listed = annotate_exact_groups(session_factory, Catalog(session_factory).duplicates())
    for group in listed:
        assert group["files"][0]["keep"] is True
        assert group["keeper"] == f"{group['files'][0]['source']}/{group['files'][0]['path']}"
    assert {g["keeper"] for g in listed} == {g["keeper"] for g in plan["groups"]}
    # The user's decision comes first, even for a copy-looking name; a decision may
    # keep several copies.
    group = by_keeper["card/IMG_0003.jpg"]
    chosen = [q["path"] for q in group["quarantine"]][:2]
    Browser(session_factory).decide(group["group"], chosen)
    decided = {g["group"]: g for g in dedupe.plan_dedupe(session_factory)["groups"]}
    again = decided[group["group"]]
    assert (again["keeper"] in chosen, again["reason"]) == (True, "decision")
    assert sorted(again["kept"]) == sorted(chosen)
    assert {q["path"] for q in again["quarantine"]} == (
        {q["path"] for q in group["quarantine"]} - set(chosen)
    ) | {group["keeper"]}


def test_a_worker_that_lost_its_lease_cannot_write_the_journal(session_factory, tmp_path):
    service = JobService(session_factory)
    job = dedupe.start_dedupe(service, tmp_path / "home").job
    claimed = service.claim([dedupe.JOB_TYPE], "worker-1", lease_seconds=60)
    with pytest.raises(LeaseLost):
        dedupe.Journal(session_factory, (job["id"], claimed["fencing_token"] - 1)).write_plan(
            job["id"], []
        )
    dedupe.Journal(session_factory, (job["id"], claimed["fencing_token"])).write_plan(job["id"], [])


def test_dedupe_quarantines_copies_and_undo_restores_the_tree(session_factory, library, tmp_path):
    home = tmp_path / "home"
    before = sha256_tree(library)
    duplicates_before = Catalog(session_factory).duplicates()
    plan = dedupe.plan_dedupe(session_factory, near=True)
    service = JobService(session_factory)
    job = dedupe.start_dedupe(service, home, near=True).job
    with pytest.raises(organize.LibraryBusy):  # one library-wide mutation at a time
        organize.start_organize(service, tmp_path / "out")
    final = run(session_factory, job)
    assert final["state"] == JobState.SUCCEEDED
    assert service.progress(job["id"])["by_state"] == {"succeeded": plan["summary"]["files"]}
    quarantine = home / "quarantine" / job["id"]
    left, held = sha256_tree(library), sha256_tree(quarantine)
    # Nothing lost, nothing doubled: library + quarantine hold what the library held.
    assert digests(left, held) == digests(before)
    assert not set(left) & set(held)
    # The quarantine mirrors the source-relative paths, mtimes and modes.
    for relative, facts in held.items():
        assert before[relative] == facts, relative
    planned = {
        Path(q["path"]).relative_to(library).as_posix()
        for g in plan["groups"]
        for q in g["quarantine"]
    }
    assert set(held) == planned
    # Every photo content still has exactly one file in place, except the near
    # duplicate the decision let go (its only file is in the quarantine).
    photo_counts = Counter(h for p, (h, _, _) in left.items() if not p.endswith(".xmp"))
    assert set(photo_counts.values()) == {1}
    assert before["edits/IMG_300_small.jpg"][0] not in photo_counts
    assert "edits/IMG_400_small.jpg" in left  # no decision on that near group
    assert {"camera-card/IMG_0100.dng", "camera-card/IMG_0100.JPG"} <= set(left)
    assert "camera-card/IMG_0100.xmp" in left and "dups/IMG_0200 copy.xmp" in held
    # The catalogue follows: no exact duplicates left, the rows marked quarantined.
    catalog = Catalog(session_factory)
    assert catalog.duplicates() == []
    states = Counter(f["state"] for f in catalog.files())
    assert states["quarantined"] == len(planned)
    # A rescan finds nothing missing (quarantined rows are not missing files).
    scan_folders(session_factory, library)
    assert "missing" not in {f["state"] for f in catalog.files()}
    report = dedupe.dedupe_report(session_factory, job["id"])
    assert report["states"] == {"quarantined": len(planned)}
    assert report["bytes_quarantined"] == plan["summary"]["bytes"]

    undo = dedupe.start_undo(service, job["id"]).job
    assert dedupe.start_undo(service, job["id"]).job["id"] == undo["id"]
    assert run(session_factory, undo)["state"] == JobState.SUCCEEDED
    assert sha256_tree(library) == before, "undo did not restore paths, bytes, mtimes, modes"
    assert not quarantine.exists() or not any(quarantine.rglob("*"))
    assert catalog.duplicates() == duplicates_before
    assert dedupe.dedupe_report(session_factory, undo["id"])["restored"] == len(planned)
    scan_folders(session_factory, library)
    assert "missing" not in {f["state"] for f in catalog.files()}
    assert catalog.duplicates() == duplicates_before


def test_purge_deletes_quarantined_copies_while_their_keeper_is_there(
    session_factory, library, tmp_path
):
    home = tmp_path / "home"
    service = JobService(session_factory)
    plan = dedupe.plan_dedupe(session_factory)
    job = dedupe.start_dedupe(service, home).job
    run(session_factory, job)
    kept = sha256_tree(library)
    # A keeper deleted by hand after the dedupe: its group's copies stay quarantined.
    group = next(g for g in plan["groups"] if Path(g["keeper"]).name == "IMG_0004.jpg")
    Path(group["keeper"]).unlink()
    # Nothing is old enough yet for a week-old purge.
    young = dedupe.start_purge(service, home, 7).job
    run(session_factory, young)
    assert dedupe.dedupe_report(session_factory, young["id"]) == {
        "job_id": young["id"],
        "purged": 0,
        "bytes_reclaimed": 0,
        "problems": [],
    }
    purge = dedupe.start_purge(service, home, 0).job
    assert run(session_factory, purge)["state"] == JobState.SUCCEEDED
    failed = service.items(purge["id"], states=["failed"])
    assert {i["error_code"] for i in failed} == {"keeper_missing"} and len(failed) == 4
    quarantine = home / "quarantine" / job["id"]
    assert sorted(Path(p).name for p in sha256_tree(quarantine)) == sorted(
        Path(q["path"]).name for q in group["quarantine"]
    )
    report = dedupe.dedupe_report(session_factory, purge["id"])
    reclaimed = plan["summary"]["bytes"] - sum(q["size"] for q in group["quarantine"])
    kept_copies = sorted(p.pop("path") for p in report.pop("problems"))
    assert kept_copies == sorted(q["path"] for q in group["quarantine"])  # named, with why
    assert report == {
        "job_id": purge["id"],
        "purged": plan["summary"]["files"] - 4,
        "bytes_reclaimed": reclaimed,
    }
    kept.pop(str(Path(group["keeper"]).relative_to(library)))
    assert sha256_tree(library) == kept
    # Purged rows are gone from the catalogue; an undo now brings back what is left.
    rows = {f["path"]: f["state"] for f in Catalog(session_factory).files()}
    assert list(rows.values()).count("quarantined") == 4
    undo = dedupe.start_undo(service, job["id"]).job
    run(session_factory, undo)
    codes = Counter(i["error_code"] for i in service.items(undo["id"]))
    assert codes == {None: 4, "purged": plan["summary"]["files"] - 4}
    # The undo's report names each copy it could not put back, and why.
    problems = dedupe.dedupe_report(session_factory, undo["id"])["problems"]
    assert {p["reason"] for p in problems} == {"purged"}
    assert sorted(p["path"] for p in problems) == sorted(
        q["path"] for g in plan["groups"] if g is not group for q in g["quarantine"]
    )


def test_a_changed_copy_and_a_missing_keeper_are_never_touched(session_factory, library, tmp_path):
    home = tmp_path / "home"
    plan = dedupe.plan_dedupe(session_factory)
    groups = {Path(g["keeper"]).name: g for g in plan["groups"]}
    # A copy edited after the scan, and a keeper deleted by hand.
    edited = Path(groups["IMG_0003.jpg"]["quarantine"][0]["path"])
    edited.write_bytes(edited.read_bytes() + b"edited after the scan")
    edited_bytes = edited.read_bytes()
    gone = Path(groups["IMG_0002.jpg"]["keeper"])
    gone.unlink()
    changed_keeper = Path(groups["IMG_0004.jpg"]["keeper"])
    changed_keeper.write_bytes(changed_keeper.read_bytes() + b"edited keeper")
    before = sha256_tree(library)
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, home).job)
    assert job["state"] == JobState.SUCCEEDED
    failed = {
        i["item_key"].split(":", 1)[1]: i["error_code"]
        for i in service.items(job["id"], states=["failed"])
    }
    expected = {str(edited.relative_to(library)): "content_changed"}
    for q in groups["IMG_0002.jpg"]["quarantine"]:
        expected[str(Path(q["path"]).relative_to(library))] = "keeper_missing"
    for q in groups["IMG_0004.jpg"]["quarantine"]:
        expected[str(Path(q["path"]).relative_to(library))] = "keeper_changed"
    assert failed == expected
    assert edited.read_bytes() == edited_bytes
    after = sha256_tree(library)
    for relative in expected:
        assert after[relative] == before[relative], f"{relative} was touched"
    report = dedupe.dedupe_report(session_factory, job["id"])
    assert {p["reason"] for p in report["problems"]} == {
        "content_changed",
        "keeper_missing",
        "keeper_changed",
    }
    assert report["states"]["skipped"] == len(expected)


def test_a_quarantine_on_a_full_disk_fails_cleanly(session_factory, library, tiny_filesystem):  # noqa: F811
    # The library home (so its quarantine) on a 16 KiB filesystem: some copies fit.
    big = library / "big"
    for n in range(4):
        original = photos.jpeg(big / f"IMG_9{n}.jpg", size=(120, 90), seed=50 + n, quality=95)
        same_bytes(original, library / f"bigcopies/IMG_9{n} copy.jpg", 40)
    scan_folders(session_factory, library)
    before = sha256_tree(library)
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, tiny_filesystem).job)
    items = service.items(job["id"])
    codes = Counter(i["error_code"] for i in items)
    assert codes["disk_full"] and codes[None], codes  # some fitted, some did not
    quarantine = tiny_filesystem / "quarantine" / job["id"]
    held = sha256_tree(quarantine) if quarantine.exists() else {}
    assert not [p for p in held if "/.pp-" in f"/{p}"], "a temp file was left behind"
    left = sha256_tree(library)
    for item in items:
        relative = item["item_key"].split(":", 1)[1]
        if item["error_code"] is None:
            assert relative not in left and held[relative] == before[relative]
        else:  # disk_full, or a sidecar whose photo stayed
            assert left[relative] == before[relative] and relative not in held
    assert digests(left, held) == digests(before)


def test_cli_dry_run_dedupe_undo_and_purge(cli, session_factory, library, tmp_path):
    code, out, _ = cli("dedupe", "--dry-run", "--json")
    assert code == 0
    assert json.loads(out) == dedupe.plan_dedupe(session_factory)
    code, out, _ = cli("dedupe", "--dry-run")
    assert code == 0 and "13 files" in out and "original_name" in out
    before = sha256_tree(library)
    code, out, err = cli("dedupe", "--wait", "--json")
    assert code == 0, err
    shown = json.loads(out)
    assert shown["job"]["state"] == "succeeded" and shown["report"]["states"] == {"quarantined": 13}
    assert len(sha256_tree(library)) == len(before) - 13
    code, out, _ = cli("duplicates", "--json")
    assert code == 0 and json.loads(out) == []
    code, out, err = cli("dedupe", "--undo", shown["job"]["id"], "--wait", "--json")
    assert code == 0, err
    assert json.loads(out)["report"]["restored"] == 13
    assert sha256_tree(library) == before
    code, _, err = cli("dedupe", "--purge")
    assert code == 2 and "older-than-days" in err
    code, _, err = cli("dedupe", "--undo", "not-a-job")
    assert code == 3 and "job_not_found" in err  # not found, as for `job show`
    code, _, err = cli("dedupe", "--undo", a_scan_job_id(session_factory))
    assert code == 2 and "not_a_dedupe_job" in err
    code, out, err = cli("dedupe", "--wait", "--json")
    code, out, err = cli("dedupe", "--purge", "--older-than-days", "0", "--wait", "--json")
    assert code == 0, err
    assert json.loads(out)["report"]["purged"] == 13


def test_disk_full_inside_a_copy_leaves_no_partial_file(
    session_factory, library, tmp_path, monkeypatch
):
    home = tmp_path / "home"
    real_write = os.write

    def full_disk(fd: int, data) -> int:
        if ".pp-dedupe-" in os.readlink(f"/proc/self/fd/{fd}"):
            real_write(fd, bytes(data[:7]))  # a partial write, then no space
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    real_copy = os.copy_file_range

    def full_disk_copy(src: int, dst: int, count: int, *offsets) -> int:
        if ".pp-dedupe-" in os.readlink(f"/proc/self/fd/{dst}"):
            real_copy(src, dst, 7, *offsets)  # a partial copy, then no space
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_copy(src, dst, count, *offsets)

    before = sha256_tree(library)
    monkeypatch.setattr(os, "write", full_disk)
    monkeypatch.setattr(os, "copy_file_range", full_disk_copy)
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, home, hard_links=False).job)
    monkeypatch.undo()
    codes = {i["error_code"] for i in service.items(job["id"])}
    # Sidecars wait for their photo, which could not move.
    assert codes == {"disk_full", "photo_kept"}
    assert sha256_tree(library) == before
    quarantine = home / "quarantine" / job["id"]
    assert not quarantine.exists() or sha256_tree(quarantine) == {}


@pytest.mark.parametrize("hard_links", [True, False], ids=["link", "copy"])
def test_a_copy_held_open_by_a_writer_stays_and_leaves_no_quarantined_twin(
    session_factory, library, tmp_path, monkeypatch, hard_links
):
    """A program that opened the copy before the move: it stays in place, and what was
    already placed in the quarantine is taken back (no file in both places)."""

    home = tmp_path / "home"
    plan = dedupe.plan_dedupe(session_factory)
    target = Path(
        next(g for g in plan["groups"] if Path(g["keeper"]).name == "IMG_0001.jpg")["quarantine"][
            0
        ]["path"]
    )
    held: list[int] = []
    real_retire = transfer.retire

    def open_then_retire(place, *args, **kwargs):
        if place.path == str(target) and not held:
            held.append(os.open(target, os.O_WRONLY))
        return real_retire(place, *args, **kwargs)

    monkeypatch.setattr(transfer, "retire", open_then_retire)
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, home, hard_links=hard_links).job)
    monkeypatch.undo()
    os.close(held[0])
    codes = {i["item_key"].split(":", 1)[1]: i["error_code"] for i in service.items(job["id"])}
    relative = str(target.relative_to(library))
    assert codes.pop(relative) == "source_in_use"
    assert set(codes.values()) == {None}
    held_files = sha256_tree(home / "quarantine" / job["id"])
    assert relative not in held_files and target.exists()
    assert not [p for p in held_files if "/.pp-" in f"/{p}"]
    assert len(held_files) == plan["summary"]["files"] - 1


def test_a_duplicated_raw_jpeg_pair_is_kept_whole_in_one_folder(session_factory, tmp_path):
    """Two folders each hold the same RAW, JPEG and sidecar: both keepers come from
    one folder (whatever each file's own age), and the other folder's sidecar travels
    with its photos."""
    root = tmp_path / "photos"
    stamp(photos.dng(root / "card/IMG_5.dng", seed=5), 9)
    stamp(photos.jpeg(root / "card/IMG_5.JPG", size=(32, 24), seed=6), 9)
    (root / "card/IMG_5.xmp").write_text("<x:xmpmeta>card</x:xmpmeta>")
    stamp(root / "card/IMG_5.xmp", 9)
    same_bytes(root / "card/IMG_5.dng", root / "backup/IMG_5.dng", 1)
    same_bytes(root / "card/IMG_5.JPG", root / "backup/IMG_5.JPG", 20)  # older than card's
    (root / "backup/IMG_5.xmp").write_text("<x:xmpmeta>backup</x:xmpmeta>")
    stamp(root / "backup/IMG_5.xmp", 1)
    scan_folders(session_factory, root)
    plan = dedupe.plan_dedupe(session_factory)
    keepers = {Path(g["keeper"]).relative_to(root).as_posix() for g in plan["groups"]}
    assert keepers == {"backup/IMG_5.dng", "backup/IMG_5.JPG"}
    assert {g["reason"] for g in plan["groups"]} == {"oldest"}
    moving = sorted(Path(q["path"]).relative_to(root).as_posix() for g in plan["groups"]
                    for q in g["quarantine"])  # fmt: skip
    assert moving == ["card/IMG_5.JPG", "card/IMG_5.dng", "card/IMG_5.xmp"]
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, tmp_path / "home").job)
    assert service.progress(job["id"])["by_state"] == {"succeeded": 3}
    assert sorted(sha256_tree(root)) == ["backup/IMG_5.JPG", "backup/IMG_5.dng", "backup/IMG_5.xmp"]


def test_a_sidecar_spelled_otherwise_than_its_photo_travels_with_it(session_factory, tmp_path):
    """macOS writes names decomposed (NFD), other editors composed (NFC), and a card
    may change their case: the sidecar is the photo's all the same."""
    root = tmp_path / "photos"
    stamp(photos.jpeg(root / "card/Cafe\u0301.JPG", size=(32, 24), seed=6), 9)
    (root / "card/caf\u00e9.xmp").write_text("<x:xmpmeta>card</x:xmpmeta>")
    same_bytes(root / "card/Cafe\u0301.JPG", root / "backup/Caf\u00e9.jpg", 20)  # older
    (root / "backup/Caf\u00e9.xmp").write_text("<x:xmpmeta>backup</x:xmpmeta>")
    scan_folders(session_factory, root)
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, tmp_path / "home").job)
    assert service.progress(job["id"])["by_state"] == {"succeeded": 2}
    assert sorted(sha256_tree(root)) == ["backup/Caf\u00e9.jpg", "backup/Caf\u00e9.xmp"]
    held = sha256_tree(tmp_path / "home" / "quarantine" / job["id"])
    assert sorted(Path(p).name for p in held) == ["Cafe\u0301.JPG", "caf\u00e9.xmp"]


def test_a_quarantine_inside_a_source_is_refused(session_factory, library):
    with pytest.raises(dedupe.DedupeError) as refused:
        dedupe.start_dedupe(JobService(session_factory), library / "card" / ".library")
    assert refused.value.code == "quarantine_inside_source"


def test_a_page_of_groups_gets_the_keepers_the_whole_plan_picks(session_factory, library):
    # Live Photo halves copied together: the motion part's keeper follows its still's.
    videos.live_photo(library / "live", stem="IMG_5000", content_identifier="A-1", seed=5)
    for name in ("IMG_5000.HEIC", "IMG_5000.MOV"):
        same_bytes(library / "live" / name, library / "live-copy" / name, 40)
    scan_folders(session_factory, library)
    by_path = {f["path"]: f["asset_id"] for f in Catalog(session_factory).files()}
    # The user keeps the newer still: the motion part's keeper follows it, though the
    # policy alone would keep the older copy.
    still = by_path["live/IMG_5000.HEIC"]
    Browser(session_factory).decide(f"exact:{still}", [str(library / "live/IMG_5000.HEIC")])
    whole = exact_keepers(session_factory)
    motion = whole[by_path["live/IMG_5000.MOV"]]
    assert motion == (str(library / "live/IMG_5000.MOV"), "beside_its_still")
    assert len(whole) >= 7
    for asset_id, chosen in whole.items():  # each group on a page of its own
        assert exact_keepers(session_factory, [asset_id]) == {asset_id: chosen}
    assert exact_keepers(session_factory, list(whole)[:3]) == dict(list(whole.items())[:3])


def test_a_link_is_neither_kept_nor_quarantined(session_factory, tmp_path):
    """A symlink to a copy frees nothing when moved and is not read through: the plan
    leaves it out, keeps a real file and quarantines the other real copy."""
    root = tmp_path / "photos"
    stamp(photos.jpeg(root / "zz_real.jpg", size=(32, 24), seed=5), 9)
    same_bytes(root / "zz_real.jpg", root / "old/zz_real.jpg", 1)
    (root / "IMG_0001.jpg").symlink_to("zz_real.jpg")  # the most original-looking name
    scan_folders(session_factory, root)
    [group] = dedupe.plan_dedupe(session_factory)["groups"]
    assert Path(group["keeper"]).relative_to(root).as_posix() == "zz_real.jpg"
    assert [Path(q["path"]).relative_to(root).as_posix() for q in group["quarantine"]] == [
        "old/zz_real.jpg"
    ]
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, tmp_path / "home").job)
    assert service.progress(job["id"])["by_state"] == {"succeeded": 1}
    assert (root / "IMG_0001.jpg").is_symlink() and (root / "zz_real.jpg").is_file()


def test_one_file_under_two_names_is_never_its_own_duplicate(session_factory, tmp_path):
    """A file catalogued through two registered folders (one inside the other, as an
    older library could register them) and a hard link are one file under two names:
    moving either name would take the kept bytes with it, and frees nothing."""
    root = tmp_path / "photos"
    only = photos.jpeg(root / "2023/only-copy.jpg", size=(32, 24), seed=2)
    linked = photos.jpeg(root / "a.jpg", size=(32, 24), seed=3)
    os.link(linked, root / "a-link.jpg")
    scan_folders(session_factory, root)
    scan_folders(session_factory, root / "2023")
    only_bytes = only.read_bytes()
    assert dedupe.plan_dedupe(session_factory)["groups"] == []
    service = JobService(session_factory)
    job = run(session_factory, dedupe.start_dedupe(service, tmp_path / "home").job)
    assert job["state"] == JobState.SUCCEEDED
    assert service.progress(job["id"])["total"] == 0
    assert only.read_bytes() == only_bytes
    assert (root / "a.jpg").is_file() and (root / "a-link.jpg").is_file()


def test_a_worker_paused_past_its_lease_never_removes_what_an_undo_put_back(
    session_factory, library, tmp_path, monkeypatch
):
    """As organize's (tests/integration/organize/test_organize_races.py): worker A stops just
    before it removes a copy it has quarantined; B finishes the dedupe, the user undoes
    it (the copy is linked back under its name: the inode A checked), then A wakes up."""
    before = sha256_tree(library)
    service = JobService(session_factory)
    job = dedupe.start_dedupe(service, tmp_path / "home").job
    with worker_stopped_at(session_factory, monkeypatch, dedupe.JOB_TYPE, "retire"):
        at_once = take_over(session_factory, job["id"], dedupe.JOB_TYPE)
        assert service.get(job["id"])["state"] == "succeeded"
        undo = dedupe.start_undo(service, job["id"]).job
        run_worker(session_factory, dedupe.UNDO_JOB_TYPE, service=at_once)
        assert service.get(undo["id"])["state"] == "succeeded"
        assert sha256_tree(library) == before
    assert sha256_tree(library) == before
