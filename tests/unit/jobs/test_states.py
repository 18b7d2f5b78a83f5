import random
from datetime import timedelta

import pytest

from photo_pipeline.db import schema
from photo_pipeline.jobs import states
from photo_pipeline.jobs.retry import RetryPolicy
from photo_pipeline.jobs.states import ItemState, JobState, can_transition, can_transition_item


def test_database_predicates_match_the_state_machine():
    assert set(schema.ACTIVE_JOB_STATES) == set(states.ACTIVE_STATES)
    assert set(schema.CLAIMABLE_JOB_STATES) == set(states.CLAIMABLE_STATES)
    assert set(schema.LEASED_JOB_STATES) == set(states.LEASED_STATES)


def test_terminal_states_have_no_outgoing_transition():
    for state in states.TERMINAL_STATES:
        assert not states.ALLOWED_TRANSITIONS[state]
        assert not any(can_transition(state, target) for target in JobState)


def test_seed_transitions_are_kept():
    assert can_transition("queued", "running")
    assert can_transition("failed", "retry_queued")
    assert can_transition("cancelling", "succeeded")
    assert not can_transition("running", "retry_queued")
    assert not can_transition("failed", "running")


def test_item_transitions():
    assert can_transition_item("running", "queued")
    assert can_transition_item("succeeded", "succeeded")
    assert not can_transition_item("succeeded", "queued")
    assert not can_transition_item("queued", "succeeded")
    assert set(states.ITEM_TRANSITIONS) == set(ItemState)


@pytest.mark.parametrize("attempt", [1, 2, 3, 8, 30])
def test_backoff_grows_exponentially_within_jitter_bounds(attempt):
    policy = RetryPolicy(base_seconds=2, max_seconds=100)
    rng = random.Random(attempt)
    ceiling = min(100, 2 * 2 ** (attempt - 1))
    delays = [policy.delay(attempt, rng) for _ in range(200)]
    assert all(timedelta(seconds=ceiling / 2) <= d <= timedelta(seconds=ceiling) for d in delays)
    assert len(set(delays)) > 150  # jittered, not a constant
