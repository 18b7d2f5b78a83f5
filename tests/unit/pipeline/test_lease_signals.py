"""A job thread that first loads ``transfer`` (an organize under ``worker --jobs 2`` or
``serve``'s embedded worker) must not leave SIGIO at its default, which ends the
process when a lease is broken in the instant before its owner is cleared."""

from __future__ import annotations

import subprocess
import sys

_PROGRAM = """
import signal, threading
import photo_pipeline.pipeline.job_types  # what every worker loads first, in its main thread

def job():
    import photo_pipeline.pipeline.files.transfer  # noqa: F401  (first loaded by a job)

thread = threading.Thread(target=job)
thread.start()
thread.join()
print(signal.getsignal(signal.SIGIO) == signal.SIG_IGN)
"""


def test_loading_the_job_types_ignores_lease_break_signals_before_a_job_thread_runs():
    shown = subprocess.run(
        [sys.executable, "-c", _PROGRAM], capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "True", shown.stderr
