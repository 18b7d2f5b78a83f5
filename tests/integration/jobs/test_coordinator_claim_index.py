"""claim([types]) walks only its own types' part of the claim index: a backlog of
another type costs it nothing, and across types the most urgent job still wins."""

from __future__ import annotations

from datetime import timedelta

import pytest
from sqlalchemy import text

from photo_pipeline.jobs import JobService, hot_path
from photo_pipeline.jobs.clock import db_now_sql
from photo_pipeline.jobs.service import claim_candidate


def plan(session_factory, backend: str, query) -> str:
    sql = str(query.compile(session_factory.kw["bind"], compile_kwargs={"literal_binds": True}))
    with session_factory() as session:
        if backend == "sqlite":
            return " ".join(r[-1] for r in session.execute(text("EXPLAIN QUERY PLAN " + sql)))
        session.execute(text("ANALYZE jobs"))
        rows = session.execute(text("EXPLAIN (ANALYZE, COSTS OFF) " + sql))
        return "\n".join(r[0] for r in rows)


def fill(session_factory, job_type: str, count: int) -> None:
    with session_factory.begin() as session:
        session.execute(
            text(
                "INSERT INTO jobs (id, job_type, state, priority, params, request_hash, "
                "waiting_for, attempts, max_attempts, interruptions, run_after, "
                "fencing_token, version, created_at, updated_at) "
                "SELECT :prefix || n, :job_type, 'queued', 0, '{}', '', 0, 0, 3, 0, 0, 0, 1, 0, 0 "
                "FROM (WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s "
                "WHERE n < :count) SELECT n FROM s) AS numbers"
            ),
            {"prefix": f"{job_type}-", "job_type": job_type, "count": count},
        )


def test_a_backlog_of_another_type_is_not_read(service, session_factory, backend, clock):
    fill(session_factory, "thumbnail", 3000)  # queued ahead of everything below
    service.enqueue("noop")
    shown = plan(session_factory, backend, claim_candidate(["noop"], clock.now))
    if backend == "sqlite":
        assert "ix_jobs_claim_order (job_type=?" in shown
        assert "TEMP B-TREE" not in shown
    else:
        assert "ix_jobs_claim_order" in shown
        assert "Index Cond: (((job_type)::text = 'noop'::text)" in shown
        assert "Rows Removed by Filter" not in shown and "Sort" not in shown
    assert service.claim(["noop"], "w")["job_type"] == "noop"


def test_several_types_each_walk_their_own_index_range(service, session_factory, backend, clock):
    fill(session_factory, "thumbnail", 3000)
    shown = plan(session_factory, backend, claim_candidate(["a", "b"], clock.now))
    if backend == "sqlite":
        assert shown.count("ix_jobs_claim_order (job_type=?") == 2
    else:
        assert shown.count("Index Cond: (((job_type)::text = ") == 2
        assert "Rows Removed by Filter" not in shown


def test_across_types_priority_then_run_after_then_enqueue_order(service, clock):
    start = clock.now
    late = service.enqueue("a", run_after=start - timedelta(seconds=1))
    early = service.enqueue("b", run_after=start - timedelta(seconds=5))
    urgent = service.enqueue("a", priority=5)
    later_b = service.enqueue("b", run_after=start - timedelta(seconds=5))
    delayed = service.enqueue("b", priority=9, run_after=start + timedelta(minutes=1))
    order = [service.claim(["a", "b", "c"], "w")["id"] for _ in range(4)]
    assert order == [urgent["id"], early["id"], later_b["id"], late["id"]]
    assert service.claim(["a", "b"], "w") is None
    clock.advance(minutes=1)
    assert service.claim(["b", "a"], "w")["id"] == delayed["id"]


@pytest.mark.parametrize("types", [["a"], ["a", "b"]])
def test_a_claimed_job_is_skipped_by_the_next_claim(service, types):
    first = service.enqueue("a")
    second = service.enqueue("a")
    assert service.claim(types, "w1")["id"] == first["id"]
    assert service.claim(types, "w2")["id"] == second["id"]
    assert service.claim(types, "w3") is None


@pytest.mark.parametrize("backend", [pytest.param("postgresql", marks=pytest.mark.postgres)])
def test_the_postgresql_claim_statement_reads_no_other_type(session_factory):
    """The statement claim() sends on PostgreSQL (with its event), run under EXPLAIN
    ANALYZE and rolled back: the index range of its type only."""
    fill(session_factory, "thumbnail", 3000)
    JobService(session_factory).enqueue("noop")
    statement = hot_path.pg_claim_text(db_now_sql(session_factory))
    params = {"types": ["noop", "other"], "worker_id": "w", "lease_us": 30_000_000, "limit": 1}
    with session_factory() as session:
        session.execute(text("ANALYZE jobs"))
        explain = text(f"EXPLAIN (ANALYZE, COSTS OFF) {statement.element.text}")
        rows = session.execute(explain, params)
        shown = "\n".join(r[0] for r in rows)
        session.rollback()
    assert "ix_jobs_claim_order" in shown
    assert "Index Cond: (((job_type)::text = wanted.job_type)" in shown
    assert "Rows Removed by Filter" not in shown
    assert "Seq Scan on jobs" not in shown
