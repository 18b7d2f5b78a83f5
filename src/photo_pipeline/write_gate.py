"""Stop the process between database write transactions, not inside one (a module of
its own, outside `db`, so that a command installs it without loading SQLAlchemy).

Ctrl-Z (SIGTSTP) stops a process wherever it is. Stopped inside a write transaction
it keeps the database's write lock (SQLite) or its rows' locks (PostgreSQL) for as
long as it stays stopped: every other process of the library (`serve`, the workers)
then waits on the lock, and a job it holds cannot be recovered. With the gate
installed, SIGTSTP closes the gate to new write transactions, waits for the open
ones to end, and only then stops the process (SIGSTOP); `fg` (SIGCONT) reopens it.
A write that does not end within ``DRAIN_SECONDS`` (one waiting for another thread's
write, say) does not hold the stop back for longer.

As in jobs.shutdown, the signal handler takes no lock (Python runs it in the main
thread, possibly inside a write): it writes to a pipe, and a thread does the rest.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType

DRAIN_SECONDS = 10.0


class WriteGate:
    """Counts the process's open write transactions, and can hold new ones back."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._open = 0
        self._closed = False
        self._depth = threading.local()  # a thread's nested writes pass a closed gate

    @property
    def holding_back(self) -> bool:
        """Whether the gate is closed to new writes."""
        return self._closed

    @contextmanager
    def write(self) -> Iterator[None]:
        """Around one write transaction: waits while the gate is closed."""
        nested = getattr(self._depth, "value", 0)
        with self._changed:
            while self._closed and not nested:
                self._changed.wait()
            self._open += 1
        self._depth.value = nested + 1
        try:
            yield
        finally:
            self._depth.value = nested
            with self._changed:
                self._open -= 1
                self._changed.notify_all()

    @contextmanager
    def closed(self, drain_seconds: float) -> Iterator[bool]:
        """Close the gate to new writes (a thread's nested ones excepted) and wait, at
        most ``drain_seconds``, for the open ones to end; yields whether they all did.
        Reopens on exit."""
        deadline = time.monotonic() + drain_seconds
        with self._changed:
            self._closed = True
            while self._open and (left := deadline - time.monotonic()) > 0:
                self._changed.wait(left)
            drained = not self._open
        try:
            yield drained
        finally:
            with self._changed:
                self._closed = False
                self._changed.notify_all()

    def stop_between_writes(self) -> None:
        """Stop this process (SIGSTOP) once no write is open; on with SIGCONT."""
        with self.closed(DRAIN_SECONDS):
            os.kill(os.getpid(), signal.SIGSTOP)  # returns once SIGCONT continues us


WRITES = WriteGate()
_installed = threading.Lock()


def install_stop_between_writes() -> None:
    """Make SIGTSTP stop this process between write transactions; once per process.
    Only the main thread may set a signal handler: elsewhere (a command run in a
    thread, as tests do) this does nothing."""
    if threading.current_thread() is not threading.main_thread():
        return
    if not _installed.acquire(blocking=False):
        return
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)

    def handle(_signum: int, _frame: FrameType | None) -> None:
        with suppress(BlockingIOError):  # full: a stop is already on its way
            os.write(write_end, b"z")

    def stop_on_signal() -> None:
        while os.read(read_end, 1):
            WRITES.stop_between_writes()
            # Ctrl-Z pressed twice before the stop: one `fg` continues, not two.
            os.set_blocking(read_end, False)
            with suppress(BlockingIOError):
                os.read(read_end, 64)
            os.set_blocking(read_end, True)

    threading.Thread(target=stop_on_signal, name="sigtstp", daemon=True).start()
    signal.signal(signal.SIGTSTP, handle)
