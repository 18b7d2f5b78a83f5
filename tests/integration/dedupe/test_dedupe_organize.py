"""organize places one content once (#16, item 0): renamed copies are skipped as
``duplicate`` naming the copy placed, in a plan and across runs, unless
``keep_duplicates``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from photo_pipeline.jobs import JobState
from photo_pipeline.pipeline import organize
from tests.factories import photos
from tests.support.photo_jobs import TEMPLATE, run_organize, scan_folders, tree


def build(root: Path) -> None:
    photos.jpeg(root / "a/IMG_1.jpg", size=(32, 24), seed=1, taken="2023:07:14 10:00:00")
    # What a file manager makes of a copy, beside it and elsewhere (same bytes, mtime).
    shutil.copy2(root / "a/IMG_1.jpg", root / "a/IMG_1-copy.jpg")
    (root / "b").mkdir()
    shutil.copy2(root / "a/IMG_1.jpg", root / "b/IMG_1 (1).jpg")
    photos.jpeg(root / "a/IMG_2.jpg", size=(32, 24), seed=2, taken="2023:07:14 11:00:00")


def by_source(plan: dict, root: Path) -> dict[str, dict]:
    return {str(Path(e["source"]).relative_to(root)): e for e in plan["entries"]}


def test_renamed_copies_are_placed_once_in_a_plan_and_across_runs(session_factory, tmp_path, cli):
    root, dest = tmp_path / "photos", tmp_path / "organized"
    build(root)
    scan_folders(session_factory, root)
    plan = organize.plan_organize(session_factory, dest, TEMPLATE)
    entries = by_source(plan, root)
    placed = str(dest / "2023/2023-07-14/IMG_1.jpg")
    # The original-looking name is the one placed, whatever the order of the paths.
    assert (entries["a/IMG_1.jpg"]["action"], entries["a/IMG_1.jpg"]["destination"]) == (
        "copy",
        placed,
    )
    for copy in ("a/IMG_1-copy.jpg", "b/IMG_1 (1).jpg"):
        entry = entries[copy]
        assert (entry["action"], entry["reason"], entry["duplicate_of"]) == (
            "skip",
            "duplicate",
            placed,
        ), entry
    assert plan["summary"]["actions"] == {"copy": 2, "skip": 2}

    job = run_organize(session_factory, dest)
    assert job["state"] == JobState.SUCCEEDED
    assert sorted(tree(dest)) == ["2023/2023-07-14/IMG_1.jpg", "2023/2023-07-14/IMG_2.jpg"]

    # A later run: a new copy under yet another name, while the destination holds the
    # content from the first run (its catalogue rows say so).
    (root / "c").mkdir()
    shutil.copy2(root / "a/IMG_1.jpg", root / "c/holiday.jpg")
    scan_folders(session_factory, root)
    again = by_source(organize.plan_organize(session_factory, dest, TEMPLATE), root)
    assert (again["c/holiday.jpg"]["reason"], again["c/holiday.jpg"]["duplicate_of"]) == (
        "duplicate",
        placed,
    )
    assert {e["action"] for e in again.values()} == {"skip"}
    run_organize(session_factory, dest)
    assert sorted(tree(dest)) == ["2023/2023-07-14/IMG_1.jpg", "2023/2023-07-14/IMG_2.jpg"]

    # Asked to keep duplicates, every copy gets a place of its own.
    kept = organize.plan_organize(session_factory, dest, TEMPLATE, keep_duplicates=True)
    assert kept["summary"]["actions"] == {"copy": 3, "skip": 2}  # IMG_1 and IMG_2 exist
    code, out, _ = cli(
        "organize", "--dest", str(dest), "--template", TEMPLATE, "--dry-run", "--json",
        "--keep-duplicates",
    )  # fmt: skip
    assert code == 0 and json.loads(out)["summary"] == kept["summary"]
