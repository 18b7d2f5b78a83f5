"""exiftool (Phil Harvey's, Debian's ``libimage-exiftool-perl``) kept running, for the
metadata Python's readers do not reach: XMP, maker notes, QuickTime and camera blocks.

Starting exiftool costs about 100 ms of Perl; a running one (``-stay_open``) answers a
small file in a few. :class:`ExiftoolPool` keeps such processes, one per concurrent
caller (threads each take their own, so none waits for another's file), started on
first use and reused:

* a request is bounded by ``time_limit``: a file that hangs exiftool gets its process
  killed (the next request starts a fresh one) and :class:`ExiftoolTimeout`;
* a process that died (killed, crashed) is replaced, and a request it was serving is
  sent once more to the new one;
* without exiftool on the machine, :meth:`ExiftoolPool.read_tags` returns None and one
  warning says what is missing: callers keep what their own readers found;
* a process made by ``fork`` leaves its parent's processes alone and starts its own;
* each exiftool dies with the thread that started it (``setpriv --pdeathsig``, where
  util-linux has it): in stay-open mode exiftool polls its closed input forever, so a
  worker killed with -9 would otherwise leave it spinning.

pyexiftool does the same conversation, but waits on the pipe without any time limit and,
once the process has died, loops forever on its empty reads: hence this module.

Files are named ``/proc/PID/fd/N`` (the descriptor the caller opened and checked) when
the caller has one: exiftool reads exactly that file, whatever its name.
"""

from __future__ import annotations

import atexit
import itertools
import json
import logging
import os
import select
import shutil
import subprocess
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

log = logging.getLogger(__name__)

DEFAULT_TIME_LIMIT = 20.0
# Arguments of every request: one JSON object per file, numbers and dates unformatted,
# duplicates kept and named by family 0 and 1 groups (EXIF:ExifIFD:DateTimeOriginal),
# no scan for JPEG trailers, nothing on stderr worth reading.
COMMON_ARGS = ("-json", "-n", "-a", "-G0:1", "-fast", "-q", "-charset", "filename=utf8")
_READ_SIZE = 1 << 16
_MAX_REPLY = 16 << 20  # a file's whole metadata is far smaller; more is a runaway


class ExiftoolError(Exception):
    """exiftool could not answer for one file."""


class ExiftoolTimeout(ExiftoolError):
    """exiftool took longer than the time limit on one file (its process was killed)."""


class _Died(ExiftoolError):
    """The process ended (or its pipes broke) during a request."""


class _Process:
    """One ``exiftool -stay_open True -@ -``: arguments in on stdin, each request ended
    by ``-executeN``, its reply on stdout ended by ``{readyN}``."""

    def __init__(self, command: Sequence[str]) -> None:
        self._popen = subprocess.Popen(
            [*command, "-stay_open", "True", "-@", "-", "-common_args", *COMMON_ARGS],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        self._numbers = itertools.count(1)
        self.answered = 0  # requests answered

    @property
    def pid(self) -> int:
        return self._popen.pid

    @property
    def alive(self) -> bool:
        return self._popen.poll() is None

    def ask(self, args: Sequence[str], time_limit: float) -> bytes:
        """Send one request; its stdout reply without the ready marker."""
        number = next(self._numbers)
        request = "".join(f"{arg}\n" for arg in args) + f"-execute{number}\n"
        marker = f"{{ready{number}}}\n".encode()
        assert self._popen.stdin is not None and self._popen.stdout is not None
        try:
            self._popen.stdin.write(request.encode())
            self._popen.stdin.flush()
        except OSError as exc:  # BrokenPipeError: it is gone
            self.kill()
            raise _Died(f"exiftool (pid {self.pid}) is gone: {exc}") from exc
        deadline = time.monotonic() + time_limit
        fd = self._popen.stdout.fileno()
        reply = bytearray()
        while not reply.endswith(marker):
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                raise ExiftoolTimeout(f"exiftool took more than {time_limit:g} s")
            chunk = os.read(fd, _READ_SIZE)
            if not chunk:
                self.kill()
                raise _Died(f"exiftool (pid {self.pid}) ended during a request")
            reply += chunk
            if len(reply) > _MAX_REPLY:
                self.kill()
                raise ExiftoolError(f"exiftool replied more than {_MAX_REPLY} bytes")
        self.answered += 1
        return bytes(reply[: -len(marker)])

    def close(self, grace: float = 1.0) -> None:
        """Ask it to leave, kill it if it does not, and reap it."""
        try:
            if self.alive and self._popen.stdin is not None:
                self._popen.stdin.write(b"-stay_open\nFalse\n")
                self._popen.stdin.flush()
        except OSError:
            pass
        try:
            self._popen.wait(grace)
        except subprocess.TimeoutExpired:
            self.kill()
        self._close_pipes()

    def kill(self) -> None:
        if self.alive:
            self._popen.kill()
        self._popen.wait()
        self._close_pipes()

    def _close_pipes(self) -> None:
        for pipe in (self._popen.stdin, self._popen.stdout):
            if pipe is not None:
                with suppress(OSError):
                    pipe.close()


class ExiftoolPool:
    """Running exiftool processes shared by the threads of one process."""

    def __init__(self, executable: str | None = None, *, time_limit: float = DEFAULT_TIME_LIMIT):
        """``executable``: exiftool's name or path; by default the one on PATH."""
        self.wanted = executable or "exiftool"
        self.executable = shutil.which(self.wanted)  # None: not installed
        self.time_limit = time_limit
        self._lock = threading.Lock()
        self._idle: list[_Process] = []
        self._all: set[_Process] = set()
        self._unusable = False  # not installed, or exits at once: said once, not tried again
        self._pid = os.getpid()
        self.started = 0  # processes started so far
        _POOLS.add(self)

    @property
    def pids(self) -> list[int]:
        """The process ids of the running exiftools, busy and idle."""
        with self._lock:
            return sorted(process.pid for process in self._all if process.alive)

    def read_tags(
        self, file: str, args: Sequence[str], time_limit: float | None = None
    ) -> dict[str, Any] | None:
        """exiftool's tags (``Group0:Group1:Name`` -> value) of ``file`` for ``args``
        (the tags wanted, e.g. ``-time:all``), {} when it has none or cannot read the
        file, None when exiftool is not installed. Raises ExiftoolError on a time-out
        or a process that keeps dying."""
        if "\n" in file or any("\n" in arg for arg in args):
            return {}  # an argument file holds one argument a line
        if file.startswith("-"):
            file = f"./{file}"  # a name, not an option
        limit = self.time_limit if time_limit is None else time_limit
        for attempt in (1, 2):
            with self._process() as process:
                if process is None:
                    return None
                try:
                    reply = process.ask([*args, file], limit)
                except _Died as exc:
                    if attempt == 1:
                        continue  # killed under us (or by its thread's end): once more, anew
                    if process.answered:
                        raise
                    with self._lock:  # two fresh ones died before any answer
                        self._give_up(f"{self.executable} exits at once ({exc})")
                    return None
                return _parse(reply)
        raise AssertionError("unreachable")

    def execute(self, args: Sequence[str], time_limit: float | None = None) -> bytes:
        """Run one command (a write: ``-TAG=VALUE … -o OUT FILE``) and return what it
        printed. Sent once, never again (a write is checked by its caller reading the
        result). ExiftoolError without exiftool, on a time-out or a dead process."""
        if any("\n" in arg for arg in args):
            raise ExiftoolError("an argument holds a line break")
        limit = self.time_limit if time_limit is None else time_limit
        with self._process() as process:
            if process is None:
                raise ExiftoolError(f"{self.wanted} is not installed")
            return process.ask(args, limit)

    def close(self) -> None:
        """End every process (idle ones politely); the pool starts new ones if used."""
        with self._lock:
            processes, self._all, self._idle = self._all, set(), []
        for process in processes:
            process.close()

    @contextmanager
    def _process(self) -> Iterator[_Process | None]:
        process = self._take()
        try:
            yield process
        finally:
            if process is not None:
                self._give_back(process)

    def _take(self) -> _Process | None:
        self._forget_parents()
        with self._lock:
            while self._idle:
                process = self._idle.pop()
                if process.alive:
                    return process
                self._all.discard(process)
                process.kill()  # reap it
            if self.executable is None or self._unusable:
                self._give_up(f"{self.wanted} is not installed")
                return None
            executable = self.executable
        try:
            process = _Process(_command(executable))
        except OSError as exc:
            with self._lock:
                self._give_up(f"{executable} cannot run ({exc})")
            return None
        with self._lock:
            self._all.add(process)
            self.started += 1
        return process

    def _give_back(self, process: _Process) -> None:
        with self._lock:
            if os.getpid() != self._pid or process not in self._all:
                return  # forked meanwhile, or closed
            if process.alive:
                self._idle.append(process)
                return
            self._all.discard(process)
        process.kill()  # reap it, close its pipes

    def _give_up(self, reason: str) -> None:
        if self._unusable:
            return
        self._unusable = True
        log.warning(
            "%s: dates kept only in XMP, maker notes or QuickTime keys are not read "
            "(Debian/Ubuntu: apt-get install libimage-exiftool-perl)",
            reason,
        )

    def _forget_parents(self) -> None:
        """In a child made by fork (which has one thread), the processes are the
        parent's, and the lock may have been held by another thread at the fork: start
        anew. Not done in an at-fork hook: Python code run there can start a garbage
        collection that frees FFmpeg objects, which wait for threads the child lacks."""
        if os.getpid() != self._pid:
            self._pid = os.getpid()
            self._lock = threading.Lock()
            self._idle, self._all = [], set()


def _command(executable: str) -> list[str]:
    setpriv = shutil.which("setpriv")
    # Linux: exiftool gets SIGKILL when the thread that started it ends (a worker killed
    # with -9 included); in stay-open mode it would otherwise outlive us, polling.
    return [setpriv, "--pdeathsig", "KILL", "--", executable] if setpriv else [executable]


def _parse(reply: bytes) -> dict[str, Any]:
    if not reply.strip():
        return {}  # unreadable: exiftool said why on stderr
    try:
        found = json.loads(reply)
    except ValueError:
        return {}
    if not isinstance(found, list) or not found or not isinstance(found[0], dict):
        return {}
    tags = dict(found[0])
    tags.pop("SourceFile", None)
    return tags


_POOLS: weakref.WeakSet[ExiftoolPool] = weakref.WeakSet()


@atexit.register
def _close_all() -> None:
    for pool in list(_POOLS):
        if pool._pid == os.getpid():
            pool.close()


_shared: dict[int, ExiftoolPool] = {}  # by process id: a forked child makes its own


def shared_pool() -> ExiftoolPool:
    """This process's pool, made on first use."""
    pool = _shared.get(os.getpid())
    if pool is None:
        pool = _shared.setdefault(os.getpid(), ExiftoolPool())
    return pool
