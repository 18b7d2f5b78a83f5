"""`photo-pipeline --help` reads as a list: one line of summary per command, grouped."""

from __future__ import annotations

from typing import Any

import typer.main
from typer.testing import CliRunner

from photo_pipeline.cli import app


def _commands(group: Any, prefix: str = "") -> list[tuple[str, Any]]:
    # Typer 0.28 ships its own click: groups are told by their commands, not a class.
    found: list[tuple[str, Any]] = []
    for name, command in group.commands.items():
        found.append((prefix + name, command))
        if hasattr(command, "commands"):
            found += _commands(command, prefix + name + " ")
    return found


def test_every_command_summary_is_one_line() -> None:
    # The command list shows a docstring's whole first paragraph with its line breaks:
    # a summary wrapped in the source came out as a ragged block.
    root = typer.main.get_command(app)
    wrapped = [
        name
        for name, command in _commands(root)
        if "\n" in (command.help or "").strip().split("\n\n")[0]
    ]
    assert wrapped == []


def test_everyday_commands_come_before_the_panels() -> None:
    shown = CliRunner().invoke(app, ["--help"], env={"COLUMNS": "100"}).output
    assert shown.index(" import ") < shown.index("Curation") < shown.index(" rate ")
    assert shown.index("Jobs and workers") < shown.index(" worker ")
