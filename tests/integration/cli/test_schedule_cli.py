"""``photo-pipeline schedule``: add, list, pause, resume, remove, refusals with their
codes and exit codes; and the default schedules a new library is given once."""

from __future__ import annotations

import json
from datetime import datetime

from photo_pipeline.cli.common import library


def test_add_list_pause_resume_remove(cli):
    code, out, err = cli("schedule", "add", "verify", "--cron", "0 3 * * *", "--tz",
                         "Europe/Paris", "--param", "sample=10", "--json")  # fmt: skip
    assert code == 0, err
    added = json.loads(out)
    assert added["params"] == {"sample": 10} and added["time_zone"] == "Europe/Paris"
    code, out, err = cli("schedule", "add", "rescan", "--every", "6h")
    assert code == 0, err
    assert "every 6h" in out and "next run" in out

    code, out, _ = cli("schedule", "list")
    assert code == 0
    assert "cron 0 3 * * * (Europe/Paris)" in out and "sample=10" in out and "every 6h" in out
    # The next run in the schedule's zone: 03:00 in Paris.
    assert " 03:00 CE" in out

    code, out, _ = cli("schedule", "pause", str(added["id"]))
    assert code == 0 and "paused" in out
    listed = json.loads(cli("schedule", "list", "--json")[1])
    assert [s["paused"] for s in listed] == [True, False]
    assert listed[0]["next_run"] is None
    code, out, _ = cli("schedule", "resume", str(added["id"]))
    assert code == 0 and "next run" in out

    assert cli("schedule", "remove", str(added["id"]))[0] == 0
    code, _, err = cli("schedule", "remove", str(added["id"]))
    assert code == 3 and "schedule_not_found" in err
    assert [s["job_type"] for s in json.loads(cli("schedule", "list", "--json")[1])] == ["rescan"]


def test_refusals_name_the_problem(cli):
    cases = [
        (["verify", "--cron", "0 3 * *"], "invalid_cron"),
        (["verify", "--every", "often"], "invalid_interval"),
        (["verify", "--cron", "0 3 * * *", "--tz", "Nowhere/Land"], "invalid_time_zone"),
        (["verify", "--every", "1d", "--param", "sample=200"], "invalid_sample"),
        (["organize", "--every", "1d"], "unknown_job_type"),
    ]
    for args, problem in cases:
        code, _, err = cli("schedule", "add", *args)
        assert (code, problem in err) == (2, True), (args, err)
    code, _, err = cli("schedule", "add", "verify", "--cron", "0 3 * * *", "--every", "1h")
    assert code == 2 and "one of the two" in err
    assert cli("schedule", "list")[1].strip() == "no schedules"


def test_a_new_library_gets_the_default_schedules_once(cli, monkeypatch):
    monkeypatch.setenv("PHOTO_PIPELINE_DEFAULT_SCHEDULES", "1")
    listed = json.loads(cli("schedule", "list", "--json")[1])
    assert [(s["job_type"], s["cron"], s["params"]) for s in listed] == [
        ("rescan", "0 3 * * *", {}),
        ("verify", "0 4 * * 0", {"sample": 25}),
    ]
    assert cli("schedule", "remove", str(listed[0]["id"]))[0] == 0
    library().close()
    library.cache_clear()  # opened again, as the next command would
    again = json.loads(cli("schedule", "list", "--json")[1])
    assert [s["job_type"] for s in again] == ["verify"]  # what the user removed stays removed


def test_list_shows_the_last_run_and_its_job_after_a_worker_ticked(cli):
    from datetime import timedelta

    from sqlalchemy import update

    from photo_pipeline.db import write_session
    from photo_pipeline.db.schema import schedules
    from tests.support import schedule_kinds

    code, out, err = cli("schedule", "add", schedule_kinds.JOB_TYPE, "--every", "1h", "--json")
    assert code == 0, err
    added = json.loads(out)
    made = datetime.fromisoformat(added["created_at"]) - timedelta(minutes=61)
    with write_session(library().sessions) as session:  # made an hour ago: a tick is due
        session.execute(
            update(schedules)
            .where(schedules.c.id == added["id"])
            .values(created_at=made, next_due=made + timedelta(hours=1))
        )
    code, _, err = cli("worker", "--burst", "--import", "tests.support.schedule_kinds",
                       "--types", schedule_kinds.JOB_TYPE, "--poll-seconds", "0.05")  # fmt: skip
    assert code == 0, err
    [shown] = json.loads(cli("schedule", "list", "--json")[1])
    assert shown["last_job"]["state"] == "succeeded"
    code, out, _ = cli("schedule", "list")
    assert f"{shown['last_job']['id'][:8]} succeeded" in out
