"""The signal a broken file lease sends, ignored process-wide.

``transfer`` takes a write lease on an original before retiring it; until it clears
the lease's owner (the next call), a break signals this process with SIGIO, whose
default action ends it. Only the main thread may set a handler, and jobs run (and
import ``transfer``) in worker threads, so this is done where job types are loaded:
``pipeline.job_types``, always imported by the main thread before any job runs.
"""

from __future__ import annotations

import signal
import threading


def ignore_lease_breaks() -> None:
    """Ignore SIGIO unless someone handles it already; a no-op off the main thread."""
    if threading.current_thread() is threading.main_thread() and (
        signal.getsignal(signal.SIGIO) == signal.SIG_DFL
    ):
        signal.signal(signal.SIGIO, signal.SIG_IGN)
