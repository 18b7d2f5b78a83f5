"""A worker's memory budget (#12, memory per item): items weighed by their handler
start only while their estimates in flight fit the budget, in thread and process
pools alike and across the jobs of one worker; an item above the whole budget runs
alone, and nothing is skipped.

The items hold until the test opens their gate, so what runs at once is observed, not
timed. The last test decodes real progressive JPEGs whose coefficient buffers do not
fit the budget twice: they never run two at a time."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image

from photo_pipeline.jobs import JobService, JobState
from photo_pipeline.jobs.runtime import Worker, WorkerConfig
from photo_pipeline.jobs.workers import WorkerRegistry
from tests.factories.photos import jpeg, picture
from tests.support.budget_handlers import decode_weight, handlers
from tests.support.cli_processes import wait_until


class Gates:
    """The gate files of ``tests.support.budget_handlers.gated_item`` in one folder."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()

    def started(self) -> set[str]:
        return {path.name.removeprefix("started-") for path in self.folder.glob("started-*")}

    def open(self, key: str) -> None:
        (self.folder / f"go-{key}").touch()


@pytest.fixture
def live_service(session_factory) -> JobService:
    return JobService(session_factory)


@pytest.fixture
def gates(tmp_path) -> Gates:
    return Gates(tmp_path / "gates")


@pytest.fixture
def run_worker(session_factory, gates) -> Iterator:
    """Start a burst worker on a thread; at the end, open every gate and wait for it."""
    running: list[tuple[Worker, threading.Thread]] = []

    def start(service: JobService, **config) -> Worker:
        config.setdefault("burst", True)
        config.setdefault("poll_seconds", 0.05)
        worker = Worker(service, WorkerRegistry(session_factory), handlers, WorkerConfig(**config))
        thread = threading.Thread(target=worker.run, daemon=True)
        thread.start()
        running.append((worker, thread))
        return worker

    yield start
    for key in gates.started() | {"a", "b", "c", "d", "e", "f", "x", "y"}:
        gates.open(key)
    for worker, thread in running:
        worker.request_stop()
        thread.join(120)
        assert not thread.is_alive(), "the worker did not stop"


def enqueue(service: JobService, gates: Gates, weights: dict[str, int]) -> str:
    params = {"folder": str(gates.folder), "weights": weights}
    return service.enqueue("test.weighed", items=list(weights), params=params)["id"]


def observe(worker: Worker, gates: Gates, expected: set[str], in_use: int, waiting: int) -> None:
    """Wait until the budget holds ``in_use`` with ``waiting`` items queued for it and
    ``expected`` have started, or until anything else has started; then check that
    exactly ``expected`` have."""
    budget = worker.memory_budget

    def settled() -> bool:
        started = gates.started()
        if started - expected:
            return True  # something started that should not have: fail below
        return expected <= started and (budget.in_use, budget.waiting) == (in_use, waiting)

    wait_until(settled, f"{sorted(expected)} started, {in_use} reserved, {waiting} waiting")
    assert gates.started() == expected


@pytest.mark.parametrize("executor", ["thread", "process"])
def test_items_start_only_while_their_estimates_fit(live_service, run_worker, gates, executor):
    weights = {"a": 600, "b": 600, "c": 300, "d": 300, "e": 5000, "f": 100}
    job_id = enqueue(live_service, gates, weights)
    worker = run_worker(live_service, concurrency=4, executor=executor, memory_budget=1000)
    observe(worker, gates, {"a"}, in_use=600, waiting=1)  # b does not fit beside a
    gates.open("a")
    observe(worker, gates, {"a", "b", "c"}, in_use=900, waiting=1)  # b and c fit; d not
    gates.open("b")
    observe(worker, gates, {"a", "b", "c", "d"}, in_use=600, waiting=1)  # e waits
    gates.open("c")
    observe(worker, gates, {"a", "b", "c", "d"}, in_use=300, waiting=1)  # e: still d
    gates.open("d")
    # e is larger than the whole budget: it runs, alone; f waits for it.
    observe(worker, gates, {"a", "b", "c", "d", "e"}, in_use=1000, waiting=1)
    gates.open("e")
    observe(worker, gates, set(weights), in_use=100, waiting=0)
    gates.open("f")
    wait_until(lambda: live_service.get(job_id)["state"] == JobState.SUCCEEDED, "the job")
    assert live_service.progress(job_id)["by_state"] == {"succeeded": 6}
    assert worker.memory_budget.in_use == 0


def test_without_a_budget_the_same_items_run_together(live_service, run_worker, gates):
    """The check above can fail: with no budget, the pool starts all four at once."""
    enqueue(live_service, gates, {"a": 600, "b": 600, "c": 300, "d": 300})
    run_worker(live_service, concurrency=4, memory_budget=0)
    wait_until(lambda: gates.started() == {"a", "b", "c", "d"}, "all four started")


def test_the_jobs_of_one_worker_share_its_budget(live_service, run_worker, gates):
    first = enqueue(live_service, gates, {"x": 600})
    second = enqueue(live_service, gates, {"y": 600})
    worker = run_worker(live_service, concurrency=2, jobs=2, memory_budget=1000)
    budget = worker.memory_budget
    wait_until(lambda: gates.started() and budget.waiting == 1, "one item running, one waiting")
    (running,) = gates.started()
    gates.open(running)
    wait_until(lambda: gates.started() == {"x", "y"}, "the other job's item")
    gates.open("y" if running == "x" else "x")
    for job_id in (first, second):
        wait_until(lambda j=job_id: live_service.get(j)["state"] == JobState.SUCCEEDED, "jobs")


def test_an_item_that_cannot_be_weighed_fails_unrun(live_service, run_worker, gates):
    job_id = live_service.enqueue(
        "test.weighed",
        items=["a", "bad", "b"],
        params={"folder": str(gates.folder), "weights": {"a": 1, "b": 1}},
    )["id"]
    for key in ("a", "b"):
        gates.open(key)
    run_worker(live_service, concurrency=2, memory_budget=1000)
    wait_until(lambda: live_service.get(job_id)["state"] == JobState.SUCCEEDED, "the job")
    items = live_service.items(job_id, states=["failed"])
    failed = [(item["item_key"], item["error_code"]) for item in items]
    assert failed == [("bad", "unknown_weight")]
    assert gates.started() == {"a", "b"}


@pytest.fixture(scope="module")
def large_progressive_jpeg(tmp_path_factory) -> Path:
    """48 MP, progressive: libjpeg holds 137 MiB of coefficients to decode it."""
    path = tmp_path_factory.mktemp("large") / "progressive.jpg"
    picture((8000, 6000), seed=1).save(path, "JPEG", progressive=True, quality=90)
    with Image.open(path) as image:
        assert image.info.get("progressive")
    return path


def test_large_progressive_jpegs_never_decode_two_at_once(
    live_service, run_worker, tmp_path, large_progressive_jpeg
):
    large = [shutil.copy(large_progressive_jpeg, tmp_path / f"large-{n}.jpg") for n in range(3)]
    small = [str(jpeg(tmp_path / f"small-{n}.jpg", size=(1600, 1200), seed=n)) for n in range(3)]
    paths = [str(path) for pair in zip(large, small, strict=True) for path in pair]
    weights = {path: decode_weight({}, path) for path in paths}
    budget = int(1.5 * weights[paths[0]])  # one large one and some small ones fit
    assert 2 * weights[paths[0]] > budget and weights[paths[1]] < budget / 4
    log = tmp_path / "decodes.log"
    job_id = live_service.enqueue("test.decode", items=paths, params={"log": str(log)})["id"]
    run_worker(live_service, concurrency=2, memory_budget=budget)
    wait_until(lambda: live_service.get(job_id)["state"] == JobState.SUCCEEDED, "the job")
    assert live_service.progress(job_id)["by_state"] == {"succeeded": 6}

    running: set[str] = set()
    most_large = 0
    for line in log.read_text().splitlines():
        event, path = line.split(" ", 1)
        if event == "end":
            running.remove(path)
            continue
        in_flight = sum(weights[other] for other in running)
        assert not running or in_flight + weights[path] <= budget, (path, running)
        running.add(path)
        most_large = max(most_large, len(running & {str(p) for p in large}))
    assert most_large == 1
