"""Job text on a terminal: counts that agree in number, events without the
coordinator's internals, a bar without a total that spins and counts (no ``0/?``)."""

from __future__ import annotations

import io

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn

from photo_pipeline.cli.bars import ItemCountColumn
from photo_pipeline.cli.job_words import counts_words, event_words, outcome_words
from photo_pipeline.cli.shown import counted


def test_counts_agree_in_number():
    assert counted(1, "files") == "1 file"
    assert counted(0, "files") == "0 files"
    assert counted(2, "files checked") == "2 files checked"
    assert counted(1, "items done") == "1 item done"
    assert counted(12_000, "items") == "12,000 items"
    assert outcome_words("succeeded", {"failed": 1}) == "succeeded · 1 problem"
    assert outcome_words("retry_queued", {"failed": 1}) == "retry queued"
    progress = {"total": 16, "done": 16, "by_state": {"failed": 2, "succeeded": 14}}
    assert counts_words(progress) == "16 of 16 items: 14 succeeded, 2 failed"
    assert counts_words({"total": 1, "done": 1, "by_state": {"succeeded": 1}}) == "1 of 1 item"


def test_event_text_leaves_the_fencing_token_to_json():
    claimed = {"type": "claimed", "message": "w1", "data": {"fencing_token": 7, "attempt": 2}}
    assert event_words(claimed) == "claimed by worker w1 (attempt 2)"
    items = {"type": "items", "message": None, "data": {"succeeded": 14, "failed": 2}}
    assert event_words(items) == "items: 2 failed, 14 succeeded"
    added = {"type": "items_added", "message": None, "data": {"count": 1}}
    assert event_words(added) == "1 item added"
    failed = {"type": "state:retry_queued", "message": "worker died", "data": None}
    assert event_words(failed) == "retry queued: worker died"


def drawn(**fields) -> str:
    out = io.StringIO()
    console = Console(file=out, width=80, force_terminal=False, color_system=None)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), ItemCountColumn(), console=console
    ) as bars:
        bars.add_task("similar", **fields)
    return out.getvalue()


def test_a_bar_without_a_total_spins_and_counts():
    waiting = drawn(total=None, items={"total": 0, "done": 0, "by_state": {}}, ended=False)
    assert "0/?" not in waiting and "0 items so far" in waiting
    assert any(frame in waiting for frame in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")  # Rich's "dots" spinner
    done = drawn(total=40, completed=12, items={"total": 40, "done": 12, "by_state": {}})
    assert "12/40  30%" in done
    none = drawn(total=1, completed=1, items={"total": 0, "done": 0, "by_state": {}}, ended=True)
    assert "no items" in none and "0/?" not in none


def test_counts_agree_in_number_with_the_noun_wherever_it_stands() -> None:
    from photo_pipeline.cli.shown import counted

    assert counted(1, "items done") == "1 item done"
    assert counted(1, "file rows") == "1 file row"  # the noun after a word in the singular
    assert counted(1, "near-duplicate groups") == "1 near-duplicate group"
    assert counted(2, "file rows") == "2 file rows"
    assert counted(0, "files") == "0 files"
    assert counted(1_000, "bytes quarantined") == "1,000 bytes quarantined"
