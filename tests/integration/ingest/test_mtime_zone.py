"""A photo whose only date is its mtime: the mtime is an instant, so at a GPS position
its local time is worked out in the zone there, not this machine's wall clock with
that zone attached. The import runs in a process whose clock is New York's; the photo
was taken in Tokyo."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime

from tests.factories import photos
from tests.support.cli_processes import environment

MACHINE_ZONE = "America/New_York"  # UTC-4 in June
TOKYO = (35.6812, 139.7671, None)  # UTC+9, no daylight saving
MTIME = datetime(2021, 6, 1, 12, 0, 0, tzinfo=UTC)


def test_an_mtime_at_a_gps_position_is_the_local_time_there(db_url, tmp_path) -> None:
    card = tmp_path / "card"
    tokyo = photos.jpeg(card / "IMG_0001.JPG", seed=1, taken=None, offset=None, gps=TOKYO)
    nowhere = photos.jpeg(card / "IMG_0002.JPG", seed=2, taken=None, offset=None)
    for photo in (tokyo, nowhere):
        os.utime(photo, (MTIME.timestamp(), MTIME.timestamp()))
    env = {**environment(db_url, tmp_path / "home"), "TZ": MACHINE_ZONE}

    def photo_pipeline(*args: str) -> str:
        command = [sys.executable, "-m", "photo_pipeline", *args]
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stdout

    photo_pipeline("import", str(card), "--wait")
    found = json.loads(photo_pipeline("assets", "--json"))
    [there] = [asset for asset in found if asset["gps_latitude"] is not None]
    [here] = [asset for asset in found if asset["gps_latitude"] is None]
    assert there["taken_source"] == "mtime"
    assert (there["tz_name"], there["tz_source"]) == ("Asia/Tokyo", "gps_timezone")
    assert there["taken_local"] == "2021-06-01T21:00:00"  # 12:00 UTC in Tokyo
    assert there["taken_offset_minutes"] == 9 * 60
    assert datetime.fromisoformat(there["taken_utc"]) == MTIME

    # Without a position the mtime stays this machine's wall clock, floating.
    assert (here["taken_local"], here["taken_offset_minutes"]) == ("2021-06-01T08:00:00", None)
    assert here["tz_source"] == "floating"
