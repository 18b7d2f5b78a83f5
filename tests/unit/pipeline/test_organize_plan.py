"""organize's plan (``organize.plan.build_plan``) as the pure function it is: which
file goes where, from candidates, a template and what the destination holds."""

from __future__ import annotations

from dataclasses import replace

from photo_pipeline.pipeline.organize.plan import Candidate, build_plan, group_key
from photo_pipeline.pipeline.organize.template import parse as parse_template


def candidate(path: str, content: str, *, photo: bool = True, fmt: str = "jpeg", **values):
    name = path.rsplit("/", 1)[-1]
    values = {"taken": "2024-02-03T04:05:06", "original_name": name.split(".")[0], **values}
    values.setdefault("ext", name.rsplit(".", 1)[-1].lower())
    return Candidate(None, 1, "/src", path, content, 1, photo, fmt if photo else None, values)


def test_build_plan_is_a_pure_function_of_its_inputs():
    candidates = [
        candidate("a/IMG_1.CR2", "raw", fmt="cr2"),
        candidate("a/IMG_1.JPG", "jpg"),
        candidate("a/IMG_1.JPG.xmp", "x1", photo=False),
        candidate("a/IMG_1.xmp", "x2", photo=False),
        candidate("a/orphan.xmp", "x3", photo=False),
        candidate("b/img_1.cr2", "other raw", fmt="cr2"),
    ]
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    plan = build_plan(candidates, template, move=True, existing=lambda _: None)
    assert plan == build_plan(candidates, template, move=True, existing=lambda _: None)
    assert [(e.candidate.path, e.kind, e.action, e.reason, e.dest_path) for e in plan] == [
        ("a/IMG_1.CR2", "photo", "move", None, "2024/IMG_1.cr2"),
        ("a/IMG_1.JPG", "companion", "move", None, "2024/IMG_1.jpg"),
        ("a/IMG_1.JPG.xmp", "sidecar", "move", None, "2024/IMG_1.jpg.xmp"),
        ("a/IMG_1.xmp", "sidecar", "move", None, "2024/IMG_1.xmp"),
        # Differs from a planned name only in case: one file on many filesystems.
        ("b/img_1.cr2", "photo", "move", "renamed", "2024/img_1-2.cr2"),
    ]
    # One name of the group held by other content: the whole group moves on together.
    held = {"2024/IMG_1.xmp": "someone else's"}
    plan = build_plan(candidates[:4], template, move=False, existing=held.get)
    assert [(e.action, e.reason, e.dest_path) for e in plan] == [
        ("copy", "renamed", "2024/IMG_1-2.cr2"),
        ("copy", "renamed", "2024/IMG_1-2.jpg"),
        ("copy", "renamed", "2024/IMG_1-2.jpg.xmp"),
        ("copy", "renamed", "2024/IMG_1-2.xmp"),
    ]


def test_content_the_destination_holds_under_another_name_is_a_duplicate():
    candidates = [
        Candidate(
            None, 1, "/src", "x/IMG_9.jpg", "c" * 64, 1, True, "jpeg",
            {"taken": "2024-01-01T00:00:00", "original_name": "IMG_9", "ext": "jpg"},
        )
    ]  # fmt: skip
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    # The destination already has that content at 2024/IMG_9.jpg... and the name is
    # free elsewhere: not known, so placed.
    plan = build_plan(candidates, template, move=False, existing=lambda _: None)
    assert [(e.action, e.reason) for e in plan] == [("copy", None)]
    # Resident (catalogued in the destination) under another name: a duplicate of it.
    resident = Candidate(7, 2, "/dest", "old/renamed.jpg", "c" * 64, 1, True, "jpeg", resident=True)
    plan = build_plan([*candidates, resident], template, move=False, existing=lambda _: None)
    assert [(e.action, e.reason, e.duplicate_of) for e in plan] == [
        ("skip", "duplicate", "old/renamed.jpg")
    ]
    plan = build_plan(
        [*candidates, resident], template, move=False, existing=lambda _: None,
        keep_duplicates=True,
    )  # fmt: skip
    assert [(e.action, e.dest_path) for e in plan] == [("copy", "2024/IMG_9.jpg")]


def test_a_takeout_json_follows_the_photo_it_describes():
    raw, jpeg = candidate("a/IMG_1.CR2", "raw", fmt="cr2"), candidate("a/IMG_1.JPG", "jpg")
    json_of_jpeg = replace(
        candidate("a/IMG_1.JPG.json", "j1", photo=False),
        bundle=group_key(raw),
        takeout_of=jpeg.path,
    )
    template = parse_template("{taken:%Y}/Trip {original_name}.{ext}")
    plan = build_plan([raw, jpeg, json_of_jpeg], template, move=True, existing=lambda _: None)
    assert [(e.kind, e.action, e.dest_path) for e in plan] == [
        ("photo", "move", "2024/Trip IMG_1.cr2"),
        ("companion", "move", "2024/Trip IMG_1.jpg"),
        ("sidecar", "move", "2024/Trip IMG_1.jpg.json"),  # named after the JPEG
    ]
    # The JPEG's content is already in the destination: it stays, and so does its
    # JSON, while the RAW moves.
    held = {"2024/Trip IMG_1.jpg": "jpg"}
    plan = build_plan([raw, jpeg, json_of_jpeg], template, move=True, existing=held.get)
    assert [(e.kind, e.action, e.reason) for e in plan] == [
        ("photo", "move", None),
        ("companion", "skip", "exists"),
        ("sidecar", "skip", "photo_skipped"),
    ]


def test_of_exact_copies_the_one_with_its_sidecar_is_placed():
    candidates = [
        candidate("a/IMG_5.JPG", "same"),
        candidate("b/IMG_5.JPG", "same"),
        candidate("b/IMG_5.xmp", "edits", photo=False),
    ]
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    plan = build_plan(candidates, template, move=True, existing=lambda _: None)
    assert [(e.candidate.path, e.action, e.reason) for e in plan] == [
        ("b/IMG_5.JPG", "move", None),
        ("b/IMG_5.xmp", "move", None),
        ("a/IMG_5.JPG", "skip", "duplicate"),
    ]


def test_same_named_photos_of_other_shots_are_no_companions():
    """A merged card dump: a 2019 camera JPEG beside a 2023 phone HEIC of the same
    number, and two unrelated clips; each goes by its own date. A RAW and its JPEG,
    taken in one second, stay together."""
    candidates = [
        candidate("dump/IMG_0001.JPG", "canon", taken="2019-05-01T09:00:00"),
        candidate("dump/IMG_0001.HEIC", "iphone", fmt="heif", taken="2023-12-24T18:30:00"),
        candidate("dump/clip.mp4", "clip 1", fmt="mp4", taken="2023-03-01T10:00:00"),
        candidate("dump/clip.mov", "clip 2", fmt="mov", taken="2021-01-01T10:00:00"),
        candidate("dump/IMG_0002.CR2", "raw", fmt="cr2", taken="2019-05-01T09:01:00"),
        candidate("dump/IMG_0002.JPG", "jpg", taken="2019-05-01T09:01:00.500000"),
    ]
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    plan = build_plan(candidates, template, move=True, existing=lambda _: None)
    assert {(e.candidate.path, e.kind, e.dest_path) for e in plan} == {
        ("dump/IMG_0001.JPG", "photo", "2019/IMG_0001.jpg"),
        ("dump/IMG_0001.HEIC", "photo", "2023/IMG_0001.heic"),
        ("dump/clip.mp4", "photo", "2023/clip.mp4"),
        ("dump/clip.mov", "photo", "2021/clip.mov"),
        ("dump/IMG_0002.CR2", "photo", "2019/IMG_0002.cr2"),
        ("dump/IMG_0002.JPG", "companion", "2019/IMG_0002.jpg"),
    }


def test_a_live_photo_keeps_its_motion_part_when_a_copy_of_it_lies_elsewhere():
    """The MOV, exported under another name and dated a fraction earlier than its
    still, is the duplicate; the pair stays whole."""
    still = candidate("B/IMG_0002.JPG", "still", taken="2023-07-14T10:15:30.123000")
    motion = replace(
        candidate("B/IMG_0002.MOV", "motion", fmt="mov", taken="2023-07-14T10:15:30"),
        bundle=group_key(still),
    )
    export = candidate(
        "exports/clip_from_live.MOV", "motion", fmt="mov", taken="2023-07-14T10:15:30"
    )
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    plan = build_plan([export, still, motion], template, move=True, existing=lambda _: None)
    assert [(e.candidate.path, e.action, e.reason, e.dest_path) for e in plan] == [
        ("B/IMG_0002.JPG", "move", None, "2023/IMG_0002.jpg"),
        ("B/IMG_0002.MOV", "move", None, "2023/IMG_0002.mov"),
        ("exports/clip_from_live.MOV", "skip", "duplicate", "2023/IMG_0002.mov"),
    ]


def test_a_copy_an_unfinished_organize_left_is_finished_not_skipped():
    """The destination holds the photo's and its sidecar's very content at their
    names. Put there by someone: skipped, the sources stay beside them. Put there by
    an earlier organize of these very files that did not finish (its sources turned
    read-only after the copies were made): moved or copied there all the same, which
    finishes it."""
    photo = candidate("a/IMG_1.JPG", "jpg")
    sidecar = candidate("a/IMG_1.xmp", "edits", photo=False)
    template = parse_template("{taken:%Y}/{original_name}.{ext}")
    held = {"2024/IMG_1.jpg": "jpg", "2024/IMG_1.xmp": "edits"}
    plan = build_plan([photo, sidecar], template, move=True, existing=held.get)
    assert [(e.action, e.reason) for e in plan] == [("skip", "exists"), ("skip", "exists")]

    left = [
        replace(photo, left_at=frozenset({"2024/IMG_1.jpg"})),
        replace(sidecar, left_at=frozenset({"2024/IMG_1.xmp"})),
    ]
    for move, action in ((True, "move"), (False, "copy")):
        plan = build_plan(left, template, move=move, existing=held.get)
        assert [(e.action, e.reason, e.dest_path) for e in plan] == [
            (action, "unfinished", "2024/IMG_1.jpg"),
            (action, "unfinished", "2024/IMG_1.xmp"),
        ]
    # Left elsewhere, or other content at the name now: as before.
    elsewhere = [replace(photo, left_at=frozenset({"2023/IMG_1.jpg"})), sidecar]
    plan = build_plan(elsewhere, template, move=True, existing=held.get)
    assert [(e.action, e.reason) for e in plan] == [("skip", "exists"), ("skip", "exists")]
    changed = {"2024/IMG_1.jpg": "someone else's"}
    plan = build_plan(left, template, move=True, existing=changed.get)
    assert [(e.action, e.reason, e.dest_path) for e in plan] == [
        ("move", "renamed", "2024/IMG_1-2.jpg"),
        ("move", "renamed", "2024/IMG_1-2.xmp"),
    ]
    # The photo's copy is finished, its sidecar stays with it where someone put it.
    plan = build_plan([left[0], sidecar], template, move=True, existing=held.get)
    assert [(e.action, e.reason) for e in plan] == [("move", "unfinished"), ("skip", "exists")]
