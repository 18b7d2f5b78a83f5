"""The states of an organize journal entry (``organize_entries.state``): planned,
then done, failed or skipped; undone by its undo. Here rather than in ``.journal``,
which imports ``.plan``: the plan reads them too (``plan.catalogue_candidates``)."""

from __future__ import annotations

PLANNED, DONE, FAILED, SKIPPED, UNDONE = "planned", "done", "failed", "skipped", "undone"
# An entry of an ended job in these states may have placed its file and not finished:
# a move whose copy was made but whose source could not be removed, say.
UNFINISHED = (PLANNED, FAILED)
