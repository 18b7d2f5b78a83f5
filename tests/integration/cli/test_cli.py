"""The command line, driven through its entry point: output, --json and exit codes."""

from __future__ import annotations

import importlib
import itertools
import json
import os

import pytest
from sqlalchemy.engine import make_url

from photo_pipeline.cli.common import library
from photo_pipeline.jobs import JobService, JobState, RetryPolicy
from tests.support.cli_processes import wait_until


@pytest.fixture
def service(cli) -> JobService:
    return library().service


def test_jobs_and_job_show(cli, service):
    job = service.enqueue("test.record", items=["a", "b"], params={"log": "/dev/null"})
    code, out, _ = cli("jobs", "--json")
    assert code == 0
    assert [j["id"] for j in json.loads(out)] == [job["id"]]
    code, out, _ = cli("job", "show", job["id"], "--json")
    shown = json.loads(out)
    assert code == 0 and shown["progress"]["total"] == 2 and shown["failed_items"] == []
    code, out, _ = cli("job", "show", job["id"])
    assert code == 0 and "items 0 of 2 items\n" in out


def test_cancel_retry_and_exit_codes(cli, service):
    job = service.enqueue("t")
    code, out, _ = cli("job", "cancel", job["id"], "--json")
    assert code == 0 and json.loads(out)["state"] == JobState.CANCELLED
    code, _, err = cli("job", "cancel", job["id"])
    assert code == 2 and "invalid_transition" in err
    code, _, err = cli("job", "show", "no-such-job")
    assert code == 3 and "job_not_found" in err
    failed = service.enqueue("t", max_attempts=1)
    claimed = service.claim(["t"], "w")
    service.transition(failed["id"], "failed", fencing_token=claimed["fencing_token"])
    code, out, _ = cli("job", "retry", failed["id"])
    assert code == 0 and "retry_queued" in out


def test_jobs_lists_no_error_for_a_job_that_succeeded_after_one(cli, service):
    fast = JobService(service.session_factory, retry_policy=RetryPolicy(0.001, 0.01))
    died = ("worker_died", "its worker died")
    gone = fast.enqueue("t", max_attempts=1)
    claimed = fast.claim(["t"], "w")
    fast.transition(gone["id"], "failed", fencing_token=claimed["fencing_token"], error=died)
    job = fast.enqueue("t", max_attempts=2)
    claimed = fast.claim(["t"], "w")
    fast.transition(job["id"], "failed", fencing_token=claimed["fencing_token"], error=died)
    retried = {}

    def claimed_again() -> bool:
        retried["job"] = fast.claim(["t"], "w")
        return retried["job"] is not None

    wait_until(claimed_again, "the retry to be due")
    fast.transition(job["id"], "succeeded", fencing_token=retried["job"]["fencing_token"])
    assert fast.get(job["id"])["error_code"] == "worker_died"  # kept for `job show`
    code, out, _ = cli("jobs")
    assert code == 0 and out.count("worker_died") == 1  # the job that failed for good


def test_a_unique_start_of_an_id_names_its_job_as_in_git(cli, service):
    # 17 jobs: by the pigeonhole principle two share a first hex digit
    ids = sorted(service.enqueue("t")["id"] for _ in range(17))
    shared = next(a[0] for a, b in itertools.pairwise(ids) if a[0] == b[0])
    code, _, err = cli("job", "show", shared)
    assert code == 2 and "ambiguous_job_id" in err
    assert all(i in err for i in ids if i.startswith(shared))  # the candidates, listed
    unique = next(
        i[:n] for i in ids for n in range(4, 36) if [j[:n] for j in ids].count(i[:n]) == 1
    )
    full = next(i for i in ids if i.startswith(unique))
    code, out, _ = cli("job", "show", unique, "--json")
    assert code == 0 and json.loads(out)["id"] == full
    code, out, _ = cli("job", "cancel", unique)
    assert code == 0 and f"job {full} is cancelled" in out
    code, out, _ = cli("job", "events", unique, "--json")
    assert code == 0 and json.loads(out.splitlines()[-1])["type"] == "state:cancelled"
    code, _, err = cli("job", "show", "ffffffff-ffff")
    assert code == 3 and "job_not_found" in err


def test_piped_tables_keep_every_id_whole_on_one_line(cli, service):
    ids = {service.enqueue("a.job.type.with.a.rather.long.name")["id"] for _ in range(3)}
    code, out, _ = cli("jobs")
    assert code == 0
    lines_with_ids = [line for line in out.splitlines() if any(i in line for i in ids)]
    assert len(lines_with_ids) == 3


def test_events_as_json_lines_and_follow_of_a_finished_job(cli, service):
    job = service.enqueue("t", items=["a"])
    service.cancel(job["id"])
    code, out, _ = cli("job", "events", job["id"], "--json", "--follow")
    assert code == 0
    events = [json.loads(line) for line in out.splitlines()]
    assert [e["type"] for e in events] == ["queued", "state:cancelled"]
    code, out, _ = cli("job", "events", job["id"], "--after", str(events[0]["seq"]))
    assert code == 0 and " cancelled: " in out and "queued" not in out


def test_wait_runs_an_embedded_worker_and_reports_the_outcome(cli, service, tmp_path):
    log = tmp_path / "run.log"
    ok = service.enqueue("test.record", items=["a", "bad-b"], params={"log": str(log)})
    code, out, _ = cli(
        "job", "wait", ok["id"], "--embedded", "--import", "tests.support.worker_handlers", "--json"
    )
    assert code == 5  # succeeded, with a failed item
    assert [j["state"] for j in json.loads(out)] == ["succeeded"]
    assert service.progress(ok["id"])["by_state"] == {"succeeded": 1, "failed": 1}
    broken = service.enqueue(
        "test.record", items=["x"], params={"log": str(log), "crash_on": "x"}, max_attempts=1
    )
    code, out, _ = cli(
        "job", "wait", broken["id"], "--import", "tests.support.worker_handlers", "--json"
    )
    assert code == 1 and json.loads(out)[0]["state"] == "failed"
    code, out, _ = cli("workers", "--all", "--json")
    assert code == 0 and {w["state"] for w in json.loads(out)} == {"stopped"}


def test_the_embedded_worker_tells_of_a_job_once_its_final_state_is_written(cli, service, tmp_path):
    # The wait looks as soon as it is told (cli.progress): the state must be there.
    from photo_pipeline.cli.embedded import EmbeddedWorker

    importlib.import_module("tests.support.worker_handlers")  # registers test.record
    job = service.enqueue("test.record", items=["a"], params={"log": str(tmp_path / "run.log")})
    worker = EmbeddedWorker(library(), {"test.record"})
    worker.start()
    try:
        assert worker.job_ended.wait(timeout=120)
        final = service.get(job["id"])
        assert final is not None and final["state"] == JobState.SUCCEEDED
    finally:
        worker.stop()
    assert worker.failure == []


def test_a_wait_runs_its_job_once_the_worker_it_counted_on_stops(
    cli, service, tmp_path, monkeypatch
):
    """Two `--wait`s at once: the second counts on the first's embedded worker, which
    stops with the first command; the second must then run its job itself."""
    import threading

    from photo_pipeline.cli import embedded, progress

    importlib.import_module("tests.support.worker_handlers")  # registers test.record
    lib = library()
    lib.workers.register("another-wait", ["test.record"])  # live: this process's pid
    job = service.enqueue("test.record", items=["a"], params={"log": str(tmp_path / "run.log")})
    counted_on = threading.Event()
    needs_worker = embedded.needs_embedded_worker

    def needs(lib_, types):
        needed = needs_worker(lib_, types)
        if not needed:
            counted_on.set()
        return needed

    monkeypatch.setattr(embedded, "needs_embedded_worker", needs)
    finals: list[dict] = []
    waiting = threading.Thread(
        target=lambda: finals.extend(
            progress.wait_for_jobs(lib, [job["id"]], embedded=None, show_progress=False)
        ),
        daemon=True,
    )
    waiting.start()
    assert counted_on.wait(timeout=60)
    lib.workers.stop("another-wait")  # its command ended
    waiting.join(timeout=120)
    assert not waiting.is_alive(), "the wait never ran its job"
    assert [final["state"] for final in finals] == ["succeeded"]


def test_a_wait_begun_before_its_job_is_queued_runs_it(cli, service, tmp_path):
    """`import --wait` starts its worker before it queues the scan: the worker,
    idle, takes the job enqueued after it (woken in this process), and the wait
    that gets it stops the worker."""
    from photo_pipeline.cli import progress

    importlib.import_module("tests.support.worker_handlers")  # registers test.record
    lib = library()
    ready = progress.start_waiting(lib, {"test.record"}, embedded=None)
    assert ready.worker is not None  # nobody else serves test.record
    job = service.enqueue("test.record", items=["a"], params={"log": str(tmp_path / "run.log")})
    finals = progress.wait_for_jobs(
        lib, [job["id"]], embedded=None, show_progress=False, ready=ready
    )
    assert [final["state"] for final in finals] == ["succeeded"]
    assert [w["state"] for w in lib.workers.list(include_finished=True)] == ["stopped"]


def test_an_early_wait_is_stopped_when_the_command_fails_before_queuing(cli, service):
    from photo_pipeline.cli.finish import early_wait

    with pytest.raises(RuntimeError), early_wait(True, {"scan"}) as ready:
        assert ready is not None and ready.worker is not None
        raise RuntimeError("a folder that is not one")
    assert [w["state"] for w in library().workers.list(include_finished=True)] == ["stopped"]


def test_a_wait_sees_a_job_another_worker_ends_through_the_event_feed(cli, service, tmp_path):
    """No embedded worker (another serves the type): the wait is told by nobody in
    this process, and finds the end through the feed's moved cursor."""
    import threading

    from photo_pipeline.cli import progress

    lib = library()
    lib.workers.register("elsewhere", ["t"])  # live: the wait counts on it
    job = service.enqueue("t")
    finals: list[dict] = []
    waiting = threading.Thread(
        target=lambda: finals.extend(
            progress.wait_for_jobs(lib, [job["id"]], embedded=None, show_progress=False)
        ),
        daemon=True,
    )
    waiting.start()
    claimed = service.claim(["t"], "elsewhere")
    assert claimed is not None
    service.transition(job["id"], "succeeded", fencing_token=claimed["fencing_token"])
    waiting.join(timeout=120)
    assert not waiting.is_alive(), "the wait never saw the job end"
    assert [final["state"] for final in finals] == ["succeeded"]
    lib.workers.stop("elsewhere")


def test_wait_without_a_handler_is_refused(cli, service):
    job = service.enqueue("unknown.type")
    code, _, err = cli("job", "wait", job["id"], "--embedded")
    assert code == 2 and "no_handler" in err


def test_prune(cli):
    code, out, _ = cli("prune", "--older-than-days", "0", "--json")
    assert code == 0 and json.loads(out) == {"jobs": 0, "events": 0}


def test_import_assets_and_duplicates(cli, tmp_path):
    from tests.factories import photos

    root = tmp_path / "photos"
    photos.jpeg(root / "a.jpg", seed=1, taken="2023:07:14 10:15:30", make="Canon", model="R5")
    photos.jpeg(
        root / "b.jpg", seed=2, taken="2021:01:02 03:04:05", make="Apple", model="iPhone 14"
    )
    (root / "copy").mkdir()
    (root / "copy/a.jpg").write_bytes((root / "a.jpg").read_bytes())
    code, out, err = cli("import", str(root), "--wait", "--json")
    assert code == 0, err
    jobs = json.loads(out)
    assert [(j["job_type"], j["state"]) for j in jobs] == [
        ("scan", "succeeded"),
        ("render", "succeeded"),
        ("similar", "succeeded"),
    ]

    code, out, _ = cli("assets", "--json")
    assert [a["taken_local"] for a in json.loads(out)] == [
        "2021-01-02T03:04:05.123000",
        "2023-07-14T10:15:30.123000",
    ]
    code, out, _ = cli("assets", "--json", "--since", "2022-01-01")
    assert [a["model"] for a in json.loads(out)] == ["R5"]
    for not_a_day in ("notadate", "2023-13-45"):  # refused, not compared as text
        code, _, err = cli("assets", "--since", not_a_day)
        assert code == 2 and "--since" in err, (not_a_day, err)
    code, out, _ = cli("assets", "--json", "--camera", "iphone")
    assert [a["make"] for a in json.loads(out)] == ["Apple"]
    code, out, _ = cli("duplicates", "--json")
    [group] = json.loads(out)
    assert sorted(f["path"] for f in group["files"]) == ["a.jpg", "copy/a.jpg"]
    code, out, _ = cli("duplicates")
    assert "copy/a.jpg" in out


def test_import_refuses_a_missing_folder(cli, tmp_path):
    code, _, err = cli("import", str(tmp_path / "nope"))
    assert code == 2 and "not_a_folder" in err


def test_sample_set_imports_with_its_duplicates_and_broken_file(cli, tmp_path):
    code, _, _ = cli("sample", str(tmp_path / "sample"), "--count", "12")
    assert code == 0
    code, out, err = cli("import", str(tmp_path / "sample"), "--wait", "--json")
    assert code == 5, err  # done, but the broken file failed its item
    code, out, _ = cli("assets", "--json")
    assert len(json.loads(out)) == 14  # 12 photos and 2 resized copies
    code, out, _ = cli("duplicates", "--json")
    assert len(json.loads(out)) == 2
    code, out, _ = cli("duplicates", "--near", "--json")
    assert len(json.loads(out)) == 2  # each resized copy with its original
    code, out, _ = cli("jobs", "--json")
    similar, render, scan = json.loads(out)  # newest first
    assert [j["job_type"] for j in (scan, render, similar)] == ["scan", "render", "similar"]
    code, out, _ = cli("job", "show", scan["id"], "--json")
    assert [i["error_code"] for i in json.loads(out)["failed_items"]] == ["corrupt_file"]


def test_init_and_sample_report_in_json(cli, tmp_path):
    code, out, _ = cli("init", "--json")
    assert code == 0 and json.loads(out)["home"] == str(tmp_path / "home")
    code, out, _ = cli("sample", str(tmp_path / "set"), "--count", "3", "--json")
    written = json.loads(out)["photos"]
    assert code == 0 and written and all(os.path.exists(p) for p in written)


def test_init_never_prints_the_database_password(cli, db_url, monkeypatch):
    url = make_url(db_url)
    if url.get_backend_name() != "postgresql":
        pytest.skip("a SQLite URL has no password")
    # the test server trusts local connections: any password gets in
    with_password = url.set(password="s3cret-pw").render_as_string(hide_password=False)
    monkeypatch.setenv("PHOTO_PIPELINE_DATABASE_URL", with_password)
    library.cache_clear()
    for args in (["init"], ["init", "--json"]):
        code, out, err = cli(*args)
        assert code == 0 and "***" in out
        assert "s3cret-pw" not in out + err
