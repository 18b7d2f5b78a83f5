"""Group commit: successes of one worker's concurrent jobs share one commit
(``succeed_many``: one statement on PostgreSQL), each reported only once committed,
each under its own fencing token and item check."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.group_commit import GroupCommit
from tests.support.cli_processes import wait_until
from tests.support.sql_statements import statements


def test_succeed_many_checks_each_job_alone(session_factory, backend):
    service = JobService(session_factory, recover_every=None)
    a, b = service.enqueue("t"), service.enqueue("t")
    busy = service.enqueue("t", items=["x"])
    stale = service.enqueue("t")
    after = service.enqueue("u", prerequisites=[a["id"], b["id"]])
    claimed = {j["id"]: j for j in service.claim_many(["t"], "w", limit=4)}
    tokens = [(i, j["fencing_token"]) for i, j in claimed.items()]
    tokens = [(i, t + 1 if i == stale["id"] else t) for i, t in tokens]
    with statements(service) as seen:
        done = service.succeed_many(tokens)
    if backend == "postgresql":
        assert sum(seen.values()) == 1
    assert set(done) == {a["id"], b["id"]}
    assert all(d["state"] == JobState.SUCCEEDED and d["lease_owner"] is None for d in done.values())
    assert service.get(busy["id"])["state"] == JobState.RUNNING  # its item is unfinished
    assert service.get(stale["id"])["state"] == JobState.RUNNING  # a stale token
    waiting = service.get(after["id"])
    assert waiting["waiting_for"] == 0  # both prerequisites, in one statement
    kinds = [e["type"] for e in service.events(after["id"])]
    assert kinds == ["queued", "prerequisites_met"]
    for job_id in done:
        assert [e["type"] for e in service.events(job_id)][-1] == "state:succeeded"
    assert service.claim(["u"], "w")["id"] == after["id"]
    assert service.succeed_many([]) == {}


def test_finishers_arriving_during_a_commit_share_the_next(session_factory):
    service = JobService(session_factory, recover_every=None)
    for _ in range(3):
        service.enqueue("t")
    jobs = service.claim_many(["t"], "w", limit=3)
    batches: list[list[str]] = []
    first_may_commit = threading.Event()

    def flush(pairs):
        batches.append([job_id for job_id, _ in pairs])
        if len(batches) == 1:
            first_may_commit.wait(timeout=60)
        return service.succeed_many(pairs)

    group = GroupCommit(flush)
    with ThreadPoolExecutor(3) as pool:
        first = pool.submit(group.succeed, jobs[0]["id"], jobs[0]["fencing_token"])
        wait_until(lambda: len(batches) == 1, "the first commit to start")
        rest = [pool.submit(group.succeed, j["id"], j["fencing_token"]) for j in jobs[1:]]
        wait_until(lambda: len(group._pending) == 2, "both to wait for it")
        assert not first.done()  # not reported before its commit
        first_may_commit.set()
        results = [first.result(timeout=60)] + [f.result(timeout=60) for f in rest]
    assert [set(b) for b in batches] == [{jobs[0]["id"]}, {j["id"] for j in jobs[1:]}]
    assert all(r is not None and r["state"] == JobState.SUCCEEDED for r in results)


def test_a_job_the_batch_did_not_finish_is_reported_as_such(session_factory):
    service = JobService(session_factory, recover_every=None)
    service.enqueue("t")
    job = service.claim(["t"], "w")
    group = GroupCommit(service.succeed_many)
    assert group.succeed(job["id"], job["fencing_token"] + 1) is None  # stale
    assert service.get(job["id"])["state"] == JobState.RUNNING

    def broken(_pairs):
        raise RuntimeError("the batch failed")

    assert GroupCommit(broken).succeed(job["id"], job["fencing_token"]) is None
    assert group.succeed(job["id"], job["fencing_token"])["state"] == JobState.SUCCEEDED


def test_a_worker_finishing_jobs_at_once_commits_them_all(session_factory):
    from photo_pipeline.jobs.handlers import HandlerRegistry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.jobs.workers import WorkerRegistry

    live = JobService(session_factory, recover_every=None)
    together = threading.Barrier(4, timeout=60)  # all four finish at the same moment
    handlers = HandlerRegistry()
    jobs = live.enqueue_many([{"job_type": "t"}] * 8)
    after = live.enqueue("t", prerequisites=[j["id"] for j in jobs])
    config = WorkerConfig(job_types=("t",), jobs=4, burst=True, poll_seconds=0.05)
    handlers.register("t", lambda ctx: None if ctx.job_id == after["id"] else together.wait())
    Worker(live, WorkerRegistry(session_factory), handlers, config).run()
    assert {live.get(j["id"])["state"] for j in [*jobs, after]} == {JobState.SUCCEEDED}
    for job in jobs:
        kinds = [e["type"] for e in live.events(job["id"])]
        assert kinds == ["queued", "claimed", "state:succeeded"]
