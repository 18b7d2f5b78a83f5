"""Text made safe for a terminal line (photo_pipeline.cli.shown)."""

from __future__ import annotations

import io
import os

import pytest
from rich.console import Console

from photo_pipeline.cli.shown import shown, terminal_safe


@pytest.mark.parametrize(
    ("raw", "safe"),
    [
        ("IMG_0001.jpg", "IMG_0001.jpg"),
        ("café 東京 🙂.jpg", "café 東京 🙂.jpg"),  # printable Unicode stays
        ("esc\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07.jpg", r"esc\x1b[31mRED\x1b[0m\x1b]0;TITLE\x07.jpg"),
        ("a\nb\rc\td", r"a\nb\rc\td"),
        ("nul\x00del\x7f", r"nul\x00del\x7f"),
        ("csi\x9b2Jnel\x85", r"csi\x9b2Jnel\x85"),  # C1 controls
        ("evil\u202egpj.exe", r"evil\u202egpj.exe"),  # right-to-left override
        ("\u202a\u202b\u202c\u202d", r"\u202a\u202b\u202c\u202d"),
        ("\u2066\u2067\u2068\u2069", r"\u2066\u2067\u2068\u2069"),
        (os.fsdecode(b"caf\xe9.jpg"), r"caf\xe9.jpg"),  # an undecodable byte, as the byte
        ("lone\ud800", r"lone\ud800"),
        (None, ""),
        (42, "42"),
    ],
)
def test_terminal_safe(raw, safe):
    assert terminal_safe(raw) == safe


@pytest.mark.parametrize(
    "raw",
    ["[bold]x.jpg", "shared[/]evil.jpg", "[red]a[/red]\x1b[2J", "ends with \\", "a\\[b]"],
)
def test_shown_prints_markup_as_it_is(raw):
    console = Console(width=200, file=io.StringIO(), color_system=None)
    with console.capture() as captured:
        console.print(f"[bold]name[/] {shown(raw)}", highlight=False, soft_wrap=True)
    assert captured.get() == f"name {terminal_safe(raw)}\n"
