"""How a job reads on a terminal: its outcome (a job whose items failed is shown as
needing attention, never as plain success), its item counts in words, its failed
files by name and folder, and its events without the coordinator's internals
(fencing tokens stay in ``--json``). Every piece is Rich markup, made of ``shown``
text."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from photo_pipeline.cli.shown import counted, shown
from photo_pipeline.jobs.outcomes import Outcome, outcome, problems
from photo_pipeline.pipeline.job_words import ItemPlace

# Failed items named in a one-line summary; `job show` lists them all.
NAMED_IN_SUMMARY = 3
MESSAGE_CHARS = 120
_STYLE = {
    Outcome.SUCCEEDED: "green",
    Outcome.SUCCEEDED_WITH_PROBLEMS: "yellow",
    Outcome.FAILED: "red",
    Outcome.CANCELLED: "dim",
}


def outcome_words(state: str, by_state: Mapping[str, int]) -> str:
    """``succeeded``, ``succeeded · 2 problems``, ``failed``, or the state of a job
    still under way (plain text)."""
    result = outcome(state, by_state)
    if result is Outcome.SUCCEEDED_WITH_PROBLEMS:
        return f"succeeded · {counted(problems(by_state), 'problems')}"
    return str(result or state).replace("_", " ")


def outcome_markup(state: str, by_state: Mapping[str, int]) -> str:
    """``outcome_words`` coloured: amber for problems, red for a failure."""
    result = outcome(state, by_state)
    words = outcome_words(state, by_state)
    return f"[{_STYLE[result]}]{words}[/]" if result is not None else words


def counts_words(
    progress: Mapping[str, Any], what: str = "items", *, breakdown: bool = True
) -> str:
    """``16 of 16 items done: 14 succeeded, 2 failed`` (``what`` is a plural phrase);
    without ``breakdown``, only the cancelled are counted after the total."""
    total, done, by_state = progress["total"], progress["done"], progress["by_state"]
    if total == 0:
        return f"no {what.partition(' ')[0]}"
    text = f"{done:,} of {counted(total, what)}"
    told = ("succeeded", "failed", "cancelled") if breakdown else ("cancelled",)
    parts = [f"{by_state[s]:,} {s}" for s in told if by_state.get(s)]
    if parts and parts != [f"{done:,} succeeded"]:
        text += (": " if breakdown else ", ") + ", ".join(parts)
    return text


def failed_item(item: Mapping[str, Any], place: ItemPlace) -> str:
    """``IMG_0003.JPG (corrupt_file: …)``: the file's name, and why it failed."""
    message = item["error_message"] or ""
    if len(message) > MESSAGE_CHARS:
        message = message[: MESSAGE_CHARS - 1] + "…"
    why = f"{item['error_code']}: {message}" if message else str(item["error_code"])
    return f"{shown(place.name)} ({shown(why)})"


def failed_summary(
    failed: Sequence[Mapping[str, Any]], places: Mapping[str, ItemPlace], how_many: int
) -> str:
    """``2 failed: IMG_0003.JPG (corrupt_file: …), …``: the first few by name."""
    named = [failed_item(item, places[item["item_key"]]) for item in failed[:NAMED_IN_SUMMARY]]
    more = how_many - len(named)
    if more > 0:
        named.append(f"and {more:,} more")
    return f"{how_many:,} failed: " + ", ".join(named)


def in_folder(place: ItemPlace) -> str:
    """``IMG_0003.JPG in /photos/2024``."""
    return shown(place.name) + (f" in {shown(place.folder)}" if place.folder else "")


def event_words(event: Mapping[str, Any]) -> str:
    """An event's type and what it says, in words; the coordinator's own fields
    (fencing token) are left to ``--json``."""
    kind, message, data = event["type"], event["message"] or "", event["data"] or {}
    if kind == "claimed":
        attempt = f" (attempt {data['attempt']})" if data.get("attempt") else ""
        return f"claimed by worker {shown(message)}{shown(attempt)}"
    if kind == "items":
        counts = ", ".join(f"{n:,} {state}" for state, n in sorted(data.items()))
        return f"items: {shown(counts)}"
    if kind == "items_added":
        return f"{counted(int(data.get('count', 0)), 'items added')}"
    words = kind.removeprefix("state:").replace("_", " ")
    return shown(f"{words}: {message}" if message else words)


def verify_lines(report: Mapping[str, Any]) -> list[str]:
    """A verify's findings (``pipeline.verify.verify_report``): its outcome and counts,
    then each changed, missing or unreadable file by its path, with what to do."""
    job = report["job"]
    # Every kind of finding (a link out of the roots too), the usual three always.
    kinds = ["changed", "missing", "unreadable_file"]
    kinds += [k for k, v in report.items() if isinstance(v, list) and v and k not in kinds]
    counts = ", ".join(f"{len(report[k]):,} {k.removesuffix('_file')}" for k in kinds)
    state = outcome_words(job["state"], {"failed": report["problems"]})
    lines = [
        f"verify job {job['id']}: {state}, {counted(report['checked'], 'files checked')}, "
        f"{report['ok']:,} ok, {counts}"
    ]
    for kind in kinds:
        for finding in report[kind]:
            lines.append(f"  {kind} {shown(finding['path'])}")
            if finding.get("advice"):
                lines.append(f"    what to do: {shown(finding['advice'])}")
    return lines
