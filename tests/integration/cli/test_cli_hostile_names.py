"""Hostile file names on a shared drive (terminal escape sequences, a newline, Rich
markup, a bidi override, undecodable bytes) reach the human-readable output only as
visible escapes: they never recolour the terminal, clear it, split a line or turn
into styles while the user reviews a plan. ``--json`` keeps them as they are."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

from tests.factories import photos

# Copies of one photo under hostile names: one group of exact duplicates.
ESCAPES = "esc\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07.jpg"
NEWLINE = "new\nline.jpg"
MARKUP = "[bold]x.jpg"
CLOSING = "shared[/]evil.jpg"  # in a folder named "shared[": a closing tag in the path
BIDI = "evil\u202egpj.jpg"  # right-to-left override: reorders the rest of the line
UNDECODABLE = os.fsdecode(b"caf\xe9\x1b[2J.jpg")
COPIES = (ESCAPES, NEWLINE, MARKUP, CLOSING, BIDI, UNDECODABLE)
BROKEN = "bad\x1b[2Jclear.jpg"  # not a photo: a failed item, its name in the error

# How each is shown: as `ls -b` would, brackets as they are.
SHOWN = {
    ESCAPES: r"esc\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07.jpg",
    NEWLINE: r"new\nline.jpg",
    MARKUP: "[bold]x.jpg",
    CLOSING: "shared[/]evil.jpg",
    BIDI: r"evil\u202egpj.jpg",
    UNDECODABLE: r"caf\xe9\x1b[2J.jpg",
}

# Anything a terminal acts on but the line ends of the output itself.
UNSAFE = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def assert_safe(text: str) -> None:
    found = UNSAFE.search(text)
    assert found is None, f"raw {found.group()!r} in output:\n{text}"
    assert "new\nline" not in text  # a name split over two lines


def library(root: Path) -> Path:
    keeper = photos.jpeg(root / "a.jpg", seed=1, make="Evil\x1b[2JCorp", model="[bold]X[/]")
    (root / "shared[").mkdir()
    for name in COPIES:
        shutil.copy(keeper, root / name)
    photos.text_as_jpeg(root / BROKEN)
    return root


def run(cli, *args: str, code: int = 0) -> str:
    got, out, err = cli(*args)
    assert got == code, (args, out, err)
    assert_safe(out)
    assert_safe(err)
    return out


def test_hostile_names_are_shown_escaped_never_raw(cli, tmp_path):
    src = library(tmp_path / "photos")
    run(cli, "import", str(src), "--wait", code=5)  # the broken file failed its item

    out = run(cli, "duplicates")
    for name in COPIES:
        assert f"{src}/{SHOWN[name]}\n" in out, name  # each whole, on a line of its own

    out = run(cli, "dedupe", "--dry-run")
    for name in COPIES:
        assert f"quarantine {src}/{SHOWN[name]} " in out, name

    dest = tmp_path / "sorted[/]dest"  # a closing tag in the destination too
    out = run(cli, "organize", "--dest", str(dest), "--dry-run")
    assert f"into {dest} with" in out and f"in {dest} " in out
    for name in COPIES:
        assert f" {src}/{SHOWN[name]} " in out, name

    out = run(cli, "assets")
    # The camera as the library shows it (media.camera_names drops control characters);
    # its markup is shown, not obeyed.
    assert "Evil[2JCorp [bold]X[/]" in out and "\x1b" not in out

    _, jobs, _ = cli("jobs", "--json")
    [scan] = [job["id"] for job in json.loads(jobs) if job["job_type"] == "scan"]
    out = run(cli, "job", "show", scan)
    assert rf"failed bad\x1b[2Jclear.jpg in {src}: " in out  # its folder, not a source id
    assert rf"{src}/bad\x1b[2Jclear.jpg: " in out  # the error message names it too
    run(cli, "job", "events", scan)

    (src / NEWLINE).unlink()
    (src / MARKUP).write_bytes(b"rot")
    out = run(cli, "verify", "--wait", code=5)
    assert f"  missing {src}/{SHOWN[NEWLINE]}\n" in out
    assert f"  changed {src}/{SHOWN[MARKUP]}\n" in out

    out = run(cli, "organize", "--dest", str(tmp_path / "sorted"), "--wait")
    assert f"{SHOWN[ESCAPES]}: duplicate of " in out
    assert f"{SHOWN[CLOSING]}: duplicate of " in out


def test_the_json_output_keeps_the_names_as_they_are(cli, tmp_path):
    src = library(tmp_path / "photos")
    run(cli, "import", str(src), "--wait", "--json", code=5)
    out = run(cli, "duplicates", "--json")  # JSON escapes control characters itself
    [group] = json.loads(out)
    paths = {file["path"] for file in group["files"]}
    assert paths >= {ESCAPES, NEWLINE, MARKUP, CLOSING, BIDI, "a.jpg"}
    out = run(cli, "dedupe", "--dry-run", "--json")
    quarantined = {moving["path"] for moving in json.loads(out)["groups"][0]["quarantine"]}
    assert {f"{src}/{name}" for name in (ESCAPES, NEWLINE, BIDI)} <= quarantined


def test_an_error_naming_a_hostile_path_is_one_escaped_line(cli, tmp_path):
    missing = tmp_path / "no\x1b[2Jsuch[/]folder\nhere"
    code, out, err = cli("import", str(missing))
    assert code == 2 and out == ""
    assert_safe(err)
    shown = str(missing).replace("\x1b", r"\x1b").replace("\n", r"\n")
    assert err == f"error not_a_folder: {shown} is not a folder\n"
