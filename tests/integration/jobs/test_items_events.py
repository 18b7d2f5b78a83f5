"""Item batches, progress, the event cursor and retention."""

from datetime import timedelta

import pytest

from photo_pipeline.jobs import (
    InvalidArgument,
    InvalidTransition,
    JobNotFound,
    JobState,
)


@pytest.fixture
def running(service):
    service.enqueue("t", items=[f"p{n}" for n in range(10)])
    return service.claim(["t"], "w")


def test_batch_of_items_is_one_event_and_counts_attempts(service, running):
    job_id, token = running["id"], running["fencing_token"]
    service.set_items(job_id, [(f"p{n}", "running") for n in range(10)], fencing_token=token)
    service.set_items(
        job_id,
        [(f"p{n}", "succeeded") for n in range(8)]
        + [("p8", "failed", ("corrupt_file", "truncated JPEG")), ("p9", "running")],
        fencing_token=token,
    )
    progress = service.progress(job_id)
    assert progress == {
        "total": 10,
        "done": 9,
        "by_state": {"succeeded": 8, "failed": 1, "running": 1},
    }
    failed = service.items(job_id, states=["failed"])
    assert [(i["item_key"], i["error_code"], i["error_message"]) for i in failed] == [
        ("p8", "corrupt_file", "truncated JPEG")
    ]
    assert all(i["attempt_count"] == 1 for i in service.items(job_id))
    items_events = [e["data"] for e in service.events(job_id) if e["type"] == "items"]
    assert items_events == [{"running": 10}, {"succeeded": 8, "failed": 1}]


def test_invalid_item_in_a_batch_rolls_back_the_whole_batch(service, running):
    job_id, token = running["id"], running["fencing_token"]
    with pytest.raises(InvalidTransition):
        service.set_items(job_id, [("p0", "running"), ("p1", "succeeded")], fencing_token=token)
    with pytest.raises(JobNotFound) as err:
        service.set_items(job_id, [("p0", "running"), ("nope", "running")], fencing_token=token)
    assert err.value.code == "item_not_found"
    with pytest.raises(InvalidArgument) as err:
        service.set_items(job_id, [("p0", "running"), ("p0", "queued")], fencing_token=token)
    assert err.value.code == "duplicate_item"
    with pytest.raises(InvalidArgument) as err:
        service.set_items(job_id, [("p0", "done")], fencing_token=token)
    assert err.value.code == "invalid_state"
    with pytest.raises(InvalidArgument) as err:
        service.set_items(job_id, [("p0", "failed", "oops")], fencing_token=token)
    assert err.value.code == "invalid_error"
    assert service.progress(job_id)["by_state"] == {"queued": 10}


def test_item_retry_from_failed_and_terminal_items_stay(service, running):
    job_id, token = running["id"], running["fencing_token"]
    service.set_item(job_id, "p0", "running", fencing_token=token)
    service.set_item(job_id, "p0", "failed", error=("io", "disk"), fencing_token=token)
    service.set_item(job_id, "p0", "running", fencing_token=token)
    assert service.items(job_id, states=["running"])[0]["attempt_count"] == 2
    service.set_item(job_id, "p0", "succeeded", fencing_token=token)
    for target in ("queued", "running", "failed", "cancelled"):
        with pytest.raises(InvalidTransition):
            service.set_item(job_id, "p0", target, fencing_token=token)


def test_add_items_while_running(service, running):
    job_id, token = running["id"], running["fencing_token"]
    assert service.add_items(job_id, ["p9", "new1", "new2"], fencing_token=token) == 2
    assert service.progress(job_id)["total"] == 12
    keys = [i["item_key"] for i in service.items(job_id)]
    assert keys[-2:] == ["new1", "new2"]
    page = service.items(job_id, after_id=service.items(job_id)[9]["id"], limit=1)
    assert [i["item_key"] for i in page] == ["new1"]


def test_add_items_refused_on_finished_job(service):
    job = service.enqueue("t")
    service.cancel(job["id"])
    with pytest.raises(InvalidTransition):
        service.add_items(job["id"], ["x"])


def test_events_after_is_an_ordered_gap_free_cursor(service, running):
    job_id, token = running["id"], running["fencing_token"]
    for n in range(10):
        service.set_item(job_id, f"p{n}", "running", fencing_token=token)
        service.set_item(job_id, f"p{n}", "succeeded", fencing_token=token)
    service.transition(job_id, JobState.SUCCEEDED, fencing_token=token)
    every = service.events(job_id)
    assert [e["type"] for e in every[:2]] == ["queued", "claimed"]
    assert every[-1]["type"] == "state:succeeded"
    seqs = [e["seq"] for e in every]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    # Reading page by page from any cursor yields exactly the rest, in order.
    cursor, pages = 0, []
    while batch := service.events_after(job_id, cursor, limit=3):
        pages.extend(batch)
        cursor = batch[-1]["seq"]
    assert pages == every
    assert service.events_after(job_id, seqs[4]) == every[5:]


def test_events_of_other_jobs_do_not_interleave(service):
    a = service.enqueue("t")
    b = service.enqueue("t")
    service.cancel(a["id"])
    assert {e["job_id"] for e in service.events(a["id"])} == {a["id"]}
    assert [e["type"] for e in service.events(b["id"])] == ["queued"]


def test_prune_deletes_old_finished_jobs_only(service, clock):
    old_done = service.enqueue("t", items=["a"])
    service.cancel(old_done["id"])
    old_active = service.enqueue("t", items=["a"], lock="L")
    clock.advance(days=31)
    recent_done = service.enqueue("t")
    service.cancel(recent_done["id"])
    counts = service.prune(older_than=timedelta(days=30))
    assert counts["jobs"] == 1
    assert service.get(old_done["id"]) is None
    assert service.get(recent_done["id"])["state"] == JobState.CANCELLED
    assert service.get(old_active["id"])["state"] == JobState.QUEUED
    # Events of the active job stay, however old.
    assert [e["type"] for e in service.events(old_active["id"])] == ["queued"]
    assert service.progress(old_active["id"])["total"] == 1
    with pytest.raises(InvalidArgument):
        service.prune(older_than=timedelta(days=-1))


def test_items_of_a_finished_job_are_final(service, running):
    job_id, token = running["id"], running["fencing_token"]
    keys = [f"p{n}" for n in range(10)]
    service.set_items(job_id, [(k, "running") for k in keys], fencing_token=token)
    service.set_items(job_id, [(k, "failed", ("corrupt", "x")) for k in keys], fencing_token=token)
    service.transition(job_id, JobState.SUCCEEDED, fencing_token=token)
    with pytest.raises(InvalidTransition):
        service.set_item(job_id, "p0", "queued")  # unfenced, as an operator might
    assert service.progress(job_id)["by_state"] == {"failed": 10}
