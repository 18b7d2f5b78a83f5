"""What a finished job came to, beside its state.

The state machine (``states``) says whether a job ran to its end; the outcome says
whether what it did needs a person's look. A job succeeds once every item reached an
end, but an item that failed (a corrupt photo, a file found changed or missing) is a
problem someone must see: that job's outcome is ``succeeded_with_problems``, shown
as attention by every front door, not as plain success.

Derived from the durable item rows, never stored: every problem a handler finds is
one failed item (its code and message say what), so the outcome cannot disagree with
the items, and a retry that redoes them changes it with them.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum

from photo_pipeline.jobs.states import FINISHED_STATES, ItemState, JobState


class Outcome(StrEnum):
    SUCCEEDED = "succeeded"  # every item done, none failed
    SUCCEEDED_WITH_PROBLEMS = "succeeded_with_problems"  # ran to its end; items failed
    FAILED = "failed"  # the job itself failed (its error says why)
    CANCELLED = "cancelled"


def problems(by_state: Mapping[str, int]) -> int:
    """How many of a job's items failed (``progress()["by_state"]``)."""
    return int(by_state.get(ItemState.FAILED, 0))


def outcome(state: str, by_state: Mapping[str, int]) -> Outcome | None:
    """The outcome of a job in ``state`` with these item counts; None while it may
    still run (queued, running, cancelling, waiting to retry)."""
    if state not in FINISHED_STATES:
        return None
    if state == JobState.SUCCEEDED:
        return Outcome.SUCCEEDED_WITH_PROBLEMS if problems(by_state) else Outcome.SUCCEEDED
    return Outcome(state)
