"""A job's outcome beside its state: succeeded with failed items is not success."""

from __future__ import annotations

import pytest

from photo_pipeline.jobs import JobState, Outcome, outcome, problems


@pytest.mark.parametrize(
    ("state", "by_state", "expected"),
    [
        ("succeeded", {"succeeded": 16}, Outcome.SUCCEEDED),
        ("succeeded", {}, Outcome.SUCCEEDED),
        ("succeeded", {"succeeded": 14, "failed": 2}, Outcome.SUCCEEDED_WITH_PROBLEMS),
        ("failed", {"failed": 2}, Outcome.FAILED),
        ("cancelled", {"cancelled": 3, "failed": 1}, Outcome.CANCELLED),
        ("running", {"failed": 2, "queued": 5}, None),
        ("retry_queued", {"failed": 2}, None),
    ],
)
def test_the_outcome_of_each_state_and_its_item_counts(state, by_state, expected):
    assert outcome(state, by_state) is expected


def test_the_states_stay_the_seeds_and_problems_count_failed_items():
    assert "succeeded_with_problems" not in {s.value for s in JobState}
    assert problems({"succeeded": 14, "failed": 2, "cancelled": 1}) == 2
    assert problems({}) == 0
