"""The coordinator benchmark's batched writes against one by one: item updates
(section 2, ``set_items`` vs ``set_item``) and ``enqueue_many`` (section 4)."""

from __future__ import annotations

import time
from collections.abc import Iterator

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session, sessionmaker

from bench import _harness as h
from bench._coordinator_sizes import JOB_TYPE, Sizes
from bench._databases import fresh_database, opened
from photo_pipeline.db.schema import jobs

ENQUEUE_TARGET = 10_000


# ── 2. item updates ────────────────────────────────────────────────────────────
def item_keys(count: int) -> list[str]:
    return [f"photos/2024/{i:07d}.jpg" for i in range(count)]


def chunks(values: list[str], size: int) -> Iterator[list[str]]:
    for start in range(0, len(values), size):
        yield values[start : start + size]


def prepare_statistics(factory: sessionmaker[Session], backend: str, analyze: bool) -> str:
    """On PostgreSQL either ANALYZE the item table or keep autovacuum from doing so
    mid-run, so that each row shows one planner situation."""
    if backend != "postgresql":
        return "as enqueued"
    statement = "ANALYZE job_items" if analyze else (
        "ALTER TABLE job_items SET (autovacuum_enabled = off)"
    )  # fmt: skip
    with factory.begin() as session:
        session.execute(text(statement))
    return "after ANALYZE" if analyze else "no statistics yet"


def item_updates(backend: str, sizes: Sizes, *, analyze: bool = False) -> dict:
    keys = item_keys(sizes.items_total)
    with fresh_database(backend) as url, opened(url, recover_every=None) as (factory, service):
        service.enqueue("items_batched", items=keys)
        service.enqueue("items_single", items=keys)
        stats = prepare_statistics(factory, backend, analyze)
        job = service.claim(["items_batched"], "bench", lease_seconds=3600)
        token = job["fencing_token"]
        started = time.perf_counter()
        for batch in chunks(keys, sizes.item_batch):
            service.set_items(job["id"], [(k, "running") for k in batch], fencing_token=token)
            service.set_items(job["id"], [(k, "succeeded") for k in batch], fencing_token=token)
        batched_s = time.perf_counter() - started
        done = service.transition(job["id"], "succeeded", fencing_token=token)["state"]

        job = service.claim(["items_single"], "bench", lease_seconds=3600)
        token = job["fencing_token"]
        single_keys = keys[: sizes.items_single]
        started = time.perf_counter()
        for key in single_keys:
            service.set_item(job["id"], key, "running", fencing_token=token)
            service.set_item(job["id"], key, "succeeded", fencing_token=token)
        single_s = time.perf_counter() - started
        progress = service.progress(job["id"])["by_state"]
    check = done == "succeeded" and progress.get("succeeded") == len(single_keys)
    return {
        "stats": stats,
        "batched": len(keys) / batched_s,
        "single": len(single_keys) / single_s,
        "check": "ok" if check else f"FAILED: job {done}, items {progress}",
    }


def items_section(backends: list[str], sizes: Sizes) -> None:
    h.heading(
        f"2. item updates: running → succeeded, batched ({sizes.items_total:,} items, "
        f"set_items by {sizes.item_batch}) vs one by one ({sizes.items_single:,} of "
        f"{sizes.items_total:,} items, set_item)"
    )
    h.note("each item takes 2 updates (running, then succeeded), all with the fencing token")
    h.note(
        "PostgreSQL twice: right after enqueue (planner statistics of job_items not yet "
        "gathered: autovacuum is off for that table during the run) and after ANALYZE"
    )
    runs = [(backend, False) for backend in backends]
    if "postgresql" in backends:
        runs.append(("postgresql", True))
    rows = []
    for backend, analyze in runs:
        result = item_updates(backend, sizes, analyze=analyze)
        rows.append([
            backend, result["stats"], result["batched"], result["single"],
            h.ratio(result["batched"], result["single"], name=f"{backend}, {result['stats']}"),
            result["check"],
        ])  # fmt: skip
    h.table(
        ["backend", "job_items statistics", "batched items/s", "one-by-one items/s",
         "batched/one", "check"],
        rows,
    )  # fmt: skip


# ── 4. enqueue_many ────────────────────────────────────────────────────────────
def enqueue_many_rate(backend: str, n_jobs: int, batch: int) -> dict:
    with fresh_database(backend) as url, opened(url, recover_every=None) as (factory, service):
        specs = [{"job_type": JOB_TYPE} for _ in range(n_jobs)]
        keyed = [
            {"job_type": JOB_TYPE, "idempotency_key": f"k{n}", "lock": f"folder-{n}",
             "items": ["a.jpg"]}
            for n in range(n_jobs)
        ]  # fmt: skip
        rates = {}
        for label, jobs_ in (("plain", specs), ("key + lock + 1 item", keyed)):
            started = time.perf_counter()
            for start in range(0, n_jobs, batch):
                service.enqueue_many(jobs_[start : start + batch])
            rates[label] = n_jobs / (time.perf_counter() - started)
        with factory() as session:
            stored = session.scalar(select(func.count()).select_from(jobs))
    rates["check"] = "ok" if stored == 2 * n_jobs else f"FAILED: {stored} jobs stored"
    return rates


def enqueue_section(backends: list[str], sizes: Sizes) -> None:
    n, batch = sizes.enqueue, 1000
    h.heading(f"4. enqueue_many: {n:,} jobs in batches of {batch:,} (target ≥ 10,000 jobs/s)")
    rows = []
    for backend in backends:
        result = enqueue_many_rate(backend, n, batch)
        plain = h.figure(f"{backend} jobs/s", result["plain"])
        verdict = "ok" if plain >= ENQUEUE_TARGET else f"UNDER {ENQUEUE_TARGET:,}"
        rows.append([backend, plain, result["key + lock + 1 item"], verdict, result["check"]])
    h.table(
        ["backend", "jobs/s", "jobs/s with key, lock, 1 item", "plain vs target", "check"],
        rows,
    )
