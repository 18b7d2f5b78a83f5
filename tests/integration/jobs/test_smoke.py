from photo_pipeline.jobs import JobState


def test_enqueue_claim_complete(service):
    job = service.enqueue("scan", items=["a"])
    claimed = service.claim(["scan"], "w1")
    assert claimed["id"] == job["id"]
    service.set_item(job["id"], "a", "running", fencing_token=claimed["fencing_token"])
    service.set_item(job["id"], "a", "succeeded", fencing_token=claimed["fencing_token"])
    done = service.transition(job["id"], JobState.SUCCEEDED, fencing_token=claimed["fencing_token"])
    assert done["state"] == JobState.SUCCEEDED
