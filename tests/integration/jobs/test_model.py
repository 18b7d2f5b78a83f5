"""Model-based test of the job coordinator.

A Hypothesis state machine drives random sequences of enqueue, claim, heartbeat and
renew_lease, transition, retry, release, cancel, set_item(s), recover_stale and clock
advances against a real database (a fresh SQLite file, or a fresh PostgreSQL schema,
per example) and against a small in-memory model written from the coordinator's
contract. Every answer (the return value, or the exception class and its ``code``)
must match the model, and after every step the stored jobs and items must equal the
model's.

The model is deliberately plain: its own transition tables, plain strings for states,
one dict of item states per job. The retry backoff is random, so the model knows only
its window ``[now + d/2, now + d]``; it checks that the stored ``run_after`` lies in
that window and from then on uses the stored value (it decides the claim order).
Besides random calls, a ``work`` rule behaves like a real worker (claim, start items,
finish them, finish the job, acknowledge a cancel) so that runs get deep enough.
"""

from __future__ import annotations

import random
import shutil
import tempfile
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from photo_pipeline.db import open_database
from photo_pipeline.jobs import (
    InvalidArgument,
    InvalidTransition,
    JobConflict,
    JobError,
    JobNotFound,
    JobService,
    LockHeld,
    RetryPolicy,
)
from tests.conftest import FakeClock, make_database_url, require_postgres

# ── the contract, written down independently of the service ─────────────────────────
JOB_STATES = ["queued", "running", "cancelling", "cancelled", "succeeded", "failed",
              "retry_queued"]  # fmt: skip
ACTIVE = {"queued", "running", "cancelling", "retry_queued"}  # these hold their lock
CLAIMABLE = {"queued", "retry_queued"}
LEASED = {"running", "cancelling"}  # a worker holds the job
TERMINAL = {"succeeded", "cancelled"}
NOT_TERMINAL = set(JOB_STATES) - TERMINAL
# What transition() may do; "running" is reachable only through claim().
JOB_MOVES = {
    "queued": {"cancelled", "cancelling"},
    "retry_queued": {"cancelled", "cancelling"},
    "running": {"succeeded", "failed", "cancelling"},
    "cancelling": {"cancelled", "succeeded", "failed"},
    "failed": {"retry_queued"},
    "succeeded": set(),
    "cancelled": set(),
}
ITEM_STATES = ["queued", "running", "succeeded", "failed", "cancelled"]
ITEM_MOVES = {  # staying in the same state is always allowed (a no-op)
    "queued": {"running", "cancelled"},
    "running": {"succeeded", "failed", "cancelled", "queued"},
    "failed": {"queued", "running"},
    "succeeded": set(),
    "cancelled": set(),
}
ITEM_UNFINISHED = {"queued", "running"}

BASE_SECONDS, MAX_SECONDS = 1.0, 4.0  # retry backoff: after attempt n, wait [d/2, d]
MAX_INTERRUPTIONS = 2  # crashes (dead worker, expired lease) a job survives
JOB_TYPES = ["scan", "thumb"]
LOCKS = [None, None, "L1", "L2"]
IDEMPOTENCY_KEYS = [None, None, "K1", "K2"]
ITEM_KEYS = ["a", "b", "c"]
WORKERS = ["w1", "w2"]
LEASES = [1.0, 5.0, 30.0]
MISSING_JOB = "00000000-0000-0000-0000-000000000000"
ItemChange = tuple[str, str, str | None]  # item key, state, error code

JOB_PICK = st.integers(min_value=0, max_value=50)
TOKENS = st.sampled_from(["current", "current", "stale", "none"])


@dataclass(frozen=True)
class Err:
    """A refusal: the exception class and its code."""

    cls: type[JobError]
    code: str


def outcome(call: Any, *args: Any, **kwargs: Any) -> Any:
    """The call's return value, or the Err it raised."""
    try:
        return call(*args, **kwargs)
    except JobError as exc:
        return Err(type(exc), exc.code)


@dataclass
class ModelJob:
    id: str
    job_type: str
    request: dict[str, Any]  # what an idempotent re-enqueue must repeat exactly
    lock: str | None
    idempotency_key: str | None
    priority: int
    max_attempts: int
    run_after: datetime
    items: dict[str, str]  # item key -> state, in enqueue order
    item_runs: dict[str, int]  # item key -> how often it entered "running"
    item_errors: dict[str, str | None]  # item key -> error code of its last change
    state: str = "queued"
    attempts: int = 0
    interruptions: int = 0
    fencing_token: int = 0
    lease_owner: str | None = None
    lease_expires_at: datetime | None = None
    # Set while run_after is a random backoff the model has not looked at yet.
    retry_window: tuple[datetime, datetime] | None = None


class CoordinatorMachine(RuleBasedStateMachine):
    backend = "sqlite"

    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.mkdtemp(prefix="job-model-")
        self.url_source = make_database_url(self.backend, Path(self.tmp))
        self.factory = open_database(next(self.url_source))
        self.clock = FakeClock()
        self.service = JobService(
            self.factory,
            clock=self.clock,
            recover_every=None,
            retry_policy=RetryPolicy(
                base_seconds=BASE_SECONDS,
                max_seconds=MAX_SECONDS,
                max_interruptions=MAX_INTERRUPTIONS,
            ),
            rng=random.Random(0),
        )
        self.jobs: list[ModelJob] = []  # in enqueue order
        self.settled: set[str] = set()  # finished jobs whose items were checked after

    def teardown(self) -> None:
        self.factory.kw["bind"].dispose()
        self.url_source.close()  # drops the PostgreSQL schema
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ── the model ───────────────────────────────────────────────────────────────────
    @property
    def now(self) -> datetime:
        return self.clock.now

    def pick(self, index: int, prefer: set[str] = NOT_TERMINAL) -> ModelJob:
        """Mostly a job in one of the ``prefer`` states (if any), sometimes any job."""
        preferred = [j for j in self.jobs if j.state in prefer]
        pool = preferred if preferred and index % 4 else self.jobs
        return pool[index % len(pool)]

    def pick_only(self, index: int, states: set[str]) -> ModelJob:
        pool = [j for j in self.jobs if j.state in states]
        return pool[index % len(pool)]

    def has(self, states: set[str]) -> bool:
        return any(j.state in states for j in self.jobs)

    @staticmethod
    def token(job: ModelJob, choice: str) -> int | None:
        return {"current": job.fencing_token, "stale": job.fencing_token - 1, "none": None}[choice]

    def lock_taken(self, lock: str | None, *, besides: ModelJob | None = None) -> bool:
        return lock is not None and any(
            j is not besides and j.lock == lock and j.state in ACTIVE for j in self.jobs
        )

    @staticmethod
    def fence_error(job: ModelJob, token: int | None, worker: str | None = None) -> Err | None:
        """A worker's write is refused unless it still holds the job."""
        if token is not None and token != job.fencing_token:
            return Err(JobConflict, "stale_fencing_token")
        if token is not None and job.state not in LEASED:
            return Err(JobConflict, "lease_lost")
        if worker is not None and job.lease_owner not in (None, worker):
            return Err(JobConflict, "not_lease_owner")
        return None

    @staticmethod
    def move_items(job: ModelJob, from_states: set[str], to_state: str) -> None:
        for key, state in job.items.items():
            if state in from_states:
                job.items[key] = to_state

    def move(
        self, job: ModelJob, target: str, *, retry: bool = True, interrupted: bool = False
    ) -> None:
        """Apply an allowed job move with its side effects on items and the lease.
        ``interrupted``: an infrastructure failure, which refunds the attempt and
        spends one of ``MAX_INTERRUPTIONS``."""
        if target == "cancelling" and job.lease_owner is None:
            target = "cancelled"  # no worker would acknowledge: cancelled at once
        if target == "failed":
            self.move_items(job, {"running"}, "queued")  # interrupted items resume later
            if interrupted:
                job.attempts -= 1
                job.interruptions += 1
                if job.state != "cancelling" and job.interruptions < MAX_INTERRUPTIONS:
                    target = "retry_queued"
                    self.expect_backoff(job, job.interruptions)
            elif retry and job.state != "cancelling" and job.attempts < job.max_attempts:
                target = "retry_queued"
                self.expect_backoff(job, job.attempts)
        elif target == "retry_queued":  # a manual retry of a failed job: one more attempt
            job.max_attempts = max(job.max_attempts, job.attempts + 1)
            job.interruptions = 0
            job.run_after = self.now
        elif target == "cancelled":
            self.move_items(job, ITEM_UNFINISHED, "cancelled")
        job.state = target
        if target not in LEASED:
            job.lease_owner = job.lease_expires_at = None

    def expect_backoff(self, job: ModelJob, count: int) -> None:
        ceiling = min(MAX_SECONDS, BASE_SECONDS * 2 ** (count - 1))
        low, high = timedelta(seconds=ceiling / 2), timedelta(seconds=ceiling)
        job.retry_window = (self.now + low, self.now + high)

    # ── comparing with the database ─────────────────────────────────────────────────
    def match(self, job: ModelJob, row: Any) -> None:
        """Assert that a stored job (or a returned snapshot) equals the model's."""
        assert isinstance(row, dict), row
        assert row["id"] == job.id
        fields = ["job_type", "state", "attempts", "max_attempts", "interruptions",
                  "fencing_token", "lease_owner", "lease_expires_at", "priority",
                  "idempotency_key"]  # fmt: skip
        assert {f: row[f] for f in fields} == {f: getattr(job, f) for f in fields}, job
        assert row["lock_key"] == job.lock
        if job.retry_window is not None:
            low, high = job.retry_window
            assert low <= row["run_after"] <= high, (row["run_after"], job.retry_window)
            job.run_after, job.retry_window = row["run_after"], None  # learnt the draw
        assert row["run_after"] == job.run_after

    def check_items(self, job: ModelJob) -> None:
        items = self.service.items(job.id)
        stored = [(i["item_key"], i["state"], i["attempt_count"], i["error_code"]) for i in items]
        expected_items = [
            (key, state, job.item_runs[key], job.item_errors[key])
            for key, state in job.items.items()
        ]
        assert stored == expected_items
        by_state: dict[str, int] = {}
        for state in job.items.values():
            by_state[state] = by_state.get(state, 0) + 1
        done = sum(1 for s in job.items.values() if s not in ITEM_UNFINISHED)
        expected = {"total": len(job.items), "done": done, "by_state": by_state}
        assert self.service.progress(job.id) == expected

    @invariant()
    def database_matches_model(self) -> None:
        stored = self.service.list_jobs(limit=1000)  # newest first
        assert [r["id"] for r in stored] == [j.id for j in reversed(self.jobs)]
        for job, row in zip(reversed(self.jobs), stored, strict=True):
            self.match(job, row)
            if job.id not in self.settled:
                self.check_items(job)
            if job.state in TERMINAL:
                self.settled.add(job.id)  # its items can no longer change: checked enough
        for lock in ("L1", "L2"):
            holders = [b["id"] for b in self.service.blockers(lock)]
            assert holders == [j.id for j in self.jobs if j.lock == lock and j.state in ACTIVE]
        unheld = [
            j
            for j in self.jobs
            if j.state in CLAIMABLE or (j.state in LEASED and j.lease_expires_at < self.now)
        ]
        assert self.service.unheld_jobs(JOB_TYPES) == len(unheld)

    # ── enqueue ─────────────────────────────────────────────────────────────────────
    def check_enqueue(
        self, request: dict[str, Any], idempotency_key: str | None, delay: float | None
    ) -> None:
        """enqueue(**request) against the model. ``run_after`` (from ``delay``) is not
        part of the request an idempotency key stands for."""
        run_after = None if delay is None else self.now + timedelta(seconds=delay)
        got = outcome(
            self.service.enqueue, **request, idempotency_key=idempotency_key, run_after=run_after
        )
        request = {**request, "params": request["params"] or {}}  # no params means {}
        earlier = [j for j in self.jobs if idempotency_key and j.idempotency_key == idempotency_key]
        if earlier:
            if earlier[0].request == request:
                self.match(earlier[0], got)  # the same job, as it is now
            else:
                assert got == Err(JobConflict, "idempotency_conflict")
            return
        if self.lock_taken(request["lock"]):
            assert got == Err(LockHeld, "lock_held")
            return
        assert not isinstance(got, Err), got
        job = ModelJob(
            id=got["id"],
            job_type=request["job_type"],
            request=request,
            lock=request["lock"],
            idempotency_key=idempotency_key,
            priority=request["priority"],
            max_attempts=request["max_attempts"],
            run_after=run_after or self.now,
            items=dict.fromkeys(request["items"], "queued"),
            item_runs=dict.fromkeys(request["items"], 0),
            item_errors=dict.fromkeys(request["items"]),
        )
        self.jobs.append(job)
        self.match(job, got)

    @initialize(
        jobs=st.lists(
            st.tuples(
                st.sampled_from(JOB_TYPES),
                st.lists(st.sampled_from(ITEM_KEYS), unique=True),
                st.sampled_from([1, 2]),
            ),
            min_size=1,
            max_size=3,
        )
    )
    def some_jobs(self, jobs: list[tuple[str, list[str], int]]) -> None:
        """Start with a few plain jobs, so that workers have something to do at once."""
        for job_type, items, max_attempts in jobs:
            request = {"job_type": job_type, "lock": None, "items": items, "params": None,
                       "priority": 0, "max_attempts": max_attempts}  # fmt: skip
            self.check_enqueue(request, None, None)

    @rule(
        job_type=st.sampled_from(JOB_TYPES),
        lock=st.sampled_from(LOCKS),
        idempotency_key=st.sampled_from(IDEMPOTENCY_KEYS),
        items=st.lists(st.sampled_from(ITEM_KEYS), unique=True, max_size=3),
        params=st.sampled_from([None, {"size": 256}]),
        priority=st.sampled_from([0, 1]),
        max_attempts=st.sampled_from([1, 2, 3]),
        delay=st.sampled_from([None, None, -5.0, 3.0]),
    )
    def enqueue(
        self,
        job_type: str,
        lock: str | None,
        idempotency_key: str | None,
        items: list[str],
        params: dict[str, Any] | None,
        priority: int,
        max_attempts: int,
        delay: float | None,
    ) -> None:
        request = {"job_type": job_type, "lock": lock, "items": items, "params": params,
                   "priority": priority, "max_attempts": max_attempts}  # fmt: skip
        self.check_enqueue(request, idempotency_key, delay)

    @precondition(lambda self: any(j.idempotency_key for j in self.jobs))
    @rule(
        job=JOB_PICK,
        change=st.sampled_from([None, None, "priority", "items", "lock"]),
        delay=st.sampled_from([None, 3.0]),
    )
    def enqueue_again(self, job: int, change: str | None, delay: float | None) -> None:
        """A client re-sends a keyed request (with a different run_after it is still
        the same request), or sends something else under the same key."""
        keyed = [j for j in self.jobs if j.idempotency_key]
        model = keyed[job % len(keyed)]
        request = dict(model.request)
        if change == "priority":
            request["priority"] += 1
        elif change == "items":
            request["items"] = [*request["items"], "new"]
        elif change == "lock":
            request["lock"] = "L3" if request["lock"] is None else None
        self.check_enqueue(request, model.idempotency_key, delay)

    # ── workers ─────────────────────────────────────────────────────────────────────
    @rule(
        types=st.sampled_from([JOB_TYPES, JOB_TYPES, ["scan"], ["thumb"]]),
        worker=st.sampled_from(WORKERS),
        lease=st.sampled_from(LEASES),
    )
    def claim(self, types: list[str], worker: str, lease: float) -> None:
        self.check_claim(types, worker, lease)

    def check_claim(self, types: list[str], worker: str, lease: float) -> None:
        got = outcome(self.service.claim, types, worker, lease_seconds=lease)
        runnable = [
            (-j.priority, j.run_after, position, j)
            for position, j in enumerate(self.jobs)
            if j.state in CLAIMABLE and j.job_type in types and j.run_after <= self.now
        ]
        if not runnable:
            assert got is None
            return
        job = min(runnable, key=lambda r: r[:3])[3]  # priority, run_after, enqueue order
        job.state = "running"
        job.lease_owner = worker
        job.lease_expires_at = self.now + timedelta(seconds=lease)
        job.fencing_token += 1
        job.attempts += 1
        self.match(job, got)

    @precondition(lambda self: self.jobs)
    @rule(
        job=JOB_PICK,
        worker=st.sampled_from(["owner", "owner", *WORKERS]),
        lease=st.sampled_from(LEASES),
        token=TOKENS,
        renew=st.booleans(),
    )
    def heartbeat(self, job: int, worker: str, lease: float, token: str, renew: bool) -> None:
        """heartbeat() answers whether the worker still holds the job; renew_lease()
        answers the job's state instead (None when not held)."""
        model = self.pick(job, LEASED)
        if worker == "owner":
            worker = model.lease_owner or "w1"
        fencing_token = self.token(model, token)
        call = self.service.renew_lease if renew else self.service.heartbeat
        got = outcome(call, model.id, worker, lease_seconds=lease, fencing_token=fencing_token)
        holds = (
            model.lease_owner == worker
            and model.state in LEASED
            and fencing_token in (None, model.fencing_token)
        )
        if renew:
            assert got == (model.state if holds else None)
        else:
            assert got is holds
        if holds:
            model.lease_expires_at = self.now + timedelta(seconds=lease)

    def check_item_updates(
        self, model: ModelJob, updates: list[ItemChange], fencing_token: int | None
    ) -> None:
        """set_items (set_item for one update) against the model: all or nothing."""
        if len(updates) == 1:
            key, state, code = updates[0]
            error = (code, "bad photo") if code else None
            got = outcome(
                self.service.set_item, model.id, key, state, error=error,
                fencing_token=fencing_token,
            )  # fmt: skip
            answer = None
        else:
            batch = [(k, s, (c, "bad photo")) if c else (k, s) for k, s, c in updates]
            got = outcome(self.service.set_items, model.id, batch, fencing_token=fencing_token)
            answer = model.state  # so that a worker notices a cancel request
        expected = self.fence_error(model, fencing_token)
        if expected is None and updates and model.state in TERMINAL:
            expected = Err(InvalidTransition, "invalid_transition")  # its items are final
        for key, state, _ in updates:
            if expected is not None:
                break
            if key not in model.items:
                expected = Err(JobNotFound, "item_not_found")
            elif state != model.items[key] and state not in ITEM_MOVES[model.items[key]]:
                expected = Err(InvalidTransition, "invalid_transition")
        assert got == (expected or answer)
        if expected is not None:
            return
        for key, state, code in updates:
            if state == model.items[key] and code is None:
                continue  # staying put changes nothing
            if state == "running" and model.items[key] != "running":
                model.item_runs[key] += 1
            model.items[key] = state
            model.item_errors[key] = code

    @precondition(lambda self: self.jobs)
    @rule(
        job=JOB_PICK,
        updates=st.lists(
            st.tuples(
                st.sampled_from([*ITEM_KEYS, "x"]),
                st.sampled_from(ITEM_STATES),
                st.sampled_from([None, None, "corrupt"]),
            ),
            max_size=3,
            unique_by=lambda u: u[0],
        ),
        token=TOKENS,
    )
    def set_items(self, job: int, updates: list[ItemChange], token: str) -> None:
        model = self.pick(job, LEASED)
        self.check_item_updates(model, updates, self.token(model, token))

    @rule(
        worker=st.sampled_from(WORKERS),
        result=st.sampled_from(["item ok", "item ok", "item failed", "job done", "job failed"]),
    )
    def work(self, worker: str, result: str) -> None:
        """What a well-behaved worker does next: claim a job when it holds none, else
        fail or finish the job (refused while items are unfinished), start the next
        two items or finish a running one; asked to cancel, it finishes its running
        items, then acknowledges."""
        held = [j for j in self.jobs if j.state in LEASED and j.lease_owner == worker]
        if not held:
            self.check_claim(JOB_TYPES, worker, LEASES[1])
            return
        model, token = held[0], held[0].fencing_token
        queued = [k for k, s in model.items.items() if s == "queued"]
        running = [k for k, s in model.items.items() if s == "running"]
        if result == "job failed":
            self.check_transition(model, "failed", token, worker)
        elif result == "job done" or not queued + running:
            self.check_transition(model, "succeeded", token, worker)
        elif model.state == "cancelling" and not running:
            self.check_transition(model, "cancelled", token, worker)
        elif model.state == "running" and queued and (result == "item ok" or not running):
            self.check_item_updates(model, [(k, "running", None) for k in queued[:2]], token)
        elif result == "item ok":
            self.check_item_updates(model, [(running[0], "succeeded", None)], token)
        else:
            self.check_item_updates(model, [(running[0], "failed", "corrupt")], token)

    @precondition(lambda self: self.jobs)
    @rule(job=JOB_PICK, token=st.sampled_from(["current", "current", "stale"]))
    def release(self, job: int, token: str) -> None:
        """A worker shutting down hands its job back without spending an attempt."""
        model = self.pick(job, LEASED)
        fencing_token = self.token(model, token)
        got = outcome(self.service.release, model.id, fencing_token=fencing_token)
        expected = self.fence_error(model, fencing_token)
        if expected is not None:
            assert got == expected
            return
        if model.state == "cancelling":
            self.move(model, "cancelled")
        else:  # runnable again at once, its interrupted items queued again
            self.move_items(model, {"running"}, "queued")
            model.state, model.run_after = "retry_queued", self.now
            model.attempts -= 1
            model.lease_owner = model.lease_expires_at = None
        self.match(model, got)

    # ── transitions and operators ───────────────────────────────────────────────────
    def transition_refusal(
        self, model: ModelJob, target: str, fencing_token: int | None, worker: str | None
    ) -> Err | None:
        if target == "running":  # only claim() makes a job run
            return Err(InvalidTransition, "invalid_transition")
        fenced = self.fence_error(model, fencing_token, worker)
        if fenced is not None:
            return fenced
        if target not in JOB_MOVES[model.state]:
            return Err(InvalidTransition, "invalid_transition")
        if target == "succeeded" and any(s in ITEM_UNFINISHED for s in model.items.values()):
            return Err(InvalidTransition, "items_pending")
        if target == "retry_queued" and self.lock_taken(model.lock, besides=model):
            return Err(LockHeld, "lock_held")
        return None

    def check_transition(
        self,
        model: ModelJob,
        target: str,
        fencing_token: int | None,
        worker: str | None = None,
        retry: bool = True,
    ) -> None:
        got = outcome(
            self.service.transition, model.id, target, worker_id=worker,
            fencing_token=fencing_token, retry=retry,
        )  # fmt: skip
        expected = self.transition_refusal(model, target, fencing_token, worker)
        if expected is not None:
            assert got == expected
            return
        self.move(model, target, retry=retry)
        self.match(model, got)

    @precondition(lambda self: self.jobs)
    @rule(
        job=JOB_PICK,
        to_state=st.sampled_from(JOB_STATES),
        token=TOKENS,
        worker=st.sampled_from([None, *WORKERS]),
        retry=st.booleans(),
    )
    def transition(
        self, job: int, to_state: str, token: str, worker: str | None, retry: bool
    ) -> None:
        model = self.pick(job)
        self.check_transition(model, to_state, self.token(model, token), worker, retry)

    @precondition(lambda self: self.has({"failed"}))
    @rule(job=JOB_PICK)
    def retry(self, job: int) -> None:
        """An operator retries a failed job (that is transition to retry_queued)."""
        model = self.pick_only(job, {"failed"})
        got = outcome(self.service.retry, model.id)
        if self.lock_taken(model.lock, besides=model):
            assert got == Err(LockHeld, "lock_held")
            return
        self.move(model, "retry_queued")
        self.match(model, got)

    @precondition(lambda self: self.jobs)
    @rule(job=JOB_PICK, reason=st.sampled_from([None, "not needed"]))
    def cancel(self, job: int, reason: str | None) -> None:
        model = self.pick(job, LEASED)
        got = outcome(self.service.cancel, model.id, reason=reason)
        if model.state in CLAIMABLE:
            self.move(model, "cancelled")
        elif model.state == "running":
            self.move(model, "cancelling")  # the worker drains and acknowledges
        elif model.state != "cancelling":  # cancelling again changes nothing
            assert got == Err(InvalidTransition, "invalid_transition")
            return
        self.match(model, got)

    @rule(
        seconds=st.sampled_from(["lease", "lease", "run_after", 0.0, 0.25, 1.0, 2.0, 5.0, 31.0]),
        recover=st.sampled_from([True, True, False]),
        dead=st.sampled_from([[], ["w1"]]),
    )
    def tick(self, seconds: float | str, recover: bool, dead: list[str]) -> None:
        """Let time pass (maybe to the very instant the next lease expires or the next
        job becomes runnable), then maybe recover jobs whose lease expired before now
        or whose worker is known to be dead."""
        if seconds == "lease":
            instants = [j.lease_expires_at for j in self.jobs if j.state in LEASED]
        elif seconds == "run_after":
            instants = [j.run_after for j in self.jobs if j.state in CLAIMABLE]
        else:
            instants = [self.now + timedelta(seconds=seconds)]
        self.clock.now = min([t for t in instants if t >= self.now], default=self.now)
        if not recover:
            return
        got = self.service.recover_stale(dead_workers=dead)
        stale = [
            j
            for j in self.jobs
            if j.state in LEASED and (j.lease_expires_at < self.now or j.lease_owner in dead)
        ]
        assert sorted(got) == sorted(j.id for j in stale)
        for job in stale:  # an abandoned cancel finishes; running work was interrupted
            self.move(job, "cancelled" if job.state == "cancelling" else "failed", interrupted=True)
            self.match(job, self.service.get(job.id))

    @initialize()
    def refused_requests(self) -> None:
        """Unknown jobs and malformed requests are refused."""
        missing = MISSING_JOB
        not_found = Err(JobNotFound, "job_not_found")
        assert outcome(self.service.transition, missing, "cancelled") == not_found
        assert outcome(self.service.cancel, missing) == not_found
        assert outcome(self.service.heartbeat, missing, "w1") == not_found
        assert outcome(self.service.renew_lease, missing, "w1") == not_found
        assert outcome(self.service.release, missing, fencing_token=1) == not_found
        assert outcome(self.service.set_item, missing, "a", "running") == not_found
        assert outcome(self.service.set_items, missing, []) == not_found
        assert outcome(self.service.progress, missing) == not_found
        assert outcome(self.service.items, missing) == not_found
        assert self.service.get(missing) is None
        # running is reachable only through claim(), whatever the job
        invalid = Err(InvalidTransition, "invalid_transition")
        assert outcome(self.service.transition, missing, "running") == invalid
        bogus = Err(InvalidArgument, "invalid_state")
        assert outcome(self.service.transition, missing, "bogus") == bogus
        twice = [("a", "running"), ("a", "failed")]
        duplicate = Err(InvalidArgument, "duplicate_item")
        assert outcome(self.service.set_items, missing, twice) == duplicate


class PostgresCoordinatorMachine(CoordinatorMachine):
    backend = "postgresql"


COMMON = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}


def test_coordinator_matches_model_sqlite() -> None:
    run_state_machine_as_test(
        CoordinatorMachine,
        settings=settings(max_examples=40, stateful_step_count=50, **COMMON),
    )


@pytest.mark.postgres
def test_coordinator_matches_model_postgresql() -> None:
    require_postgres()
    run_state_machine_as_test(
        PostgresCoordinatorMachine,
        settings=settings(max_examples=15, stateful_step_count=40, **COMMON),
    )
