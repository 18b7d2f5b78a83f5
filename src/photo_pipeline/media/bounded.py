"""Run one decode in a forked child process that is killed at its deadline.

A decoder stuck inside C code (FFmpeg looping on a hostile stream) cannot be interrupted
from Python: no exception reaches it and a thread cannot be stopped. A child process can
be killed. ``run_bounded(fn, *args, time_limit=…)`` forks, runs ``fn(*args)`` in the
child under an address-space limit, and returns its result (pickled through a pipe); when
the deadline passes first, the child is SIGKILLed and ``decode_timeout`` raised. A
decode that needs more memory than that limit is the file's fault (``corrupt_file``);
one that hits the process's own lower limit (a ``ulimit -v``) ran out at a bad moment
(``out_of_memory``).

fork (not spawn) keeps this cheap: the child already has every module loaded and
starts in about a millisecond. The child touches only what ``fn`` uses, returns through
the pipe and leaves with ``os._exit`` (no atexit handlers, no flushing of the parent's
buffers). Should fork ever copy a lock held by another thread of the parent, the child
would block on it and be killed at the deadline like any other hang.

The child also bounds itself: an alarm (default action: terminate) a second after the
deadline ends it even when its parent died first (a worker killed with -9) and cannot
kill it; Ctrl-C in the terminal is left to the parent, which owns the item.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import pickle
import resource
import select
import signal
import time
import warnings
from collections.abc import Callable
from typing import Any, TypeVar, cast

from photo_pipeline.media.errors import CORRUPT_FILE, DECODE_TIMEOUT, OUT_OF_MEMORY, MediaError

T = TypeVar("T")

# Address space a child may add to what it inherits: room for a few 200-Mpx frames.
DEFAULT_MEMORY_LIMIT = 4 << 30
_CHUNK = 1 << 20


def run_bounded(
    fn: Callable[..., T],
    *args: Any,
    time_limit: float,
    memory_limit: int = DEFAULT_MEMORY_LIMIT,
    what: str = "decode",
) -> T:
    """``fn(*args)`` in a child process, killed after ``time_limit`` seconds.

    A MediaError raised by ``fn`` is raised here; running out of memory in the child
    becomes ``out_of_memory``, any other exception ``corrupt_file``; the deadline
    ``decode_timeout``.
    """
    read_end, write_end = os.pipe()
    # The child must never collect what it inherited: a cycle holding an FFmpeg object
    # would be freed there, and its deallocation waits for threads the child does not
    # have. Frozen objects are out of the collector's reach; the child, which only
    # runs ``fn``, also turns collection off at once.
    gc.freeze()
    pid = -1
    try:
        with warnings.catch_warnings():
            # Python >= 3.12 warns about fork in a threaded process; see the module doc
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:  # the child: never returns
            gc.disable()
            os.close(read_end)
            _child(write_end, fn, args, memory_limit, time_limit, what)
    finally:
        if pid != 0:
            gc.unfreeze()
    os.close(write_end)
    try:
        data = _read_message(read_end, pid, time.monotonic() + time_limit)
    finally:
        os.close(read_end)
        _kill_and_reap(pid)
    if data is None:
        raise MediaError(DECODE_TIMEOUT, f"{what} exceeded its limit of {time_limit:g} s")
    if not data:
        raise MediaError(CORRUPT_FILE, f"{what} crashed the decoder")
    outcome, value = pickle.loads(data)
    if outcome == "ok":
        return cast(T, value)
    if outcome == "media_error":
        code, detail = value
        raise MediaError(code, detail)
    raise MediaError(CORRUPT_FILE, f"{what} failed: {value}")


def _child(
    write_end: int,
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    memory: int,
    seconds: float,
    what: str,
) -> None:
    status = 0
    own_limit = True
    try:
        try:
            signal.signal(signal.SIGINT, signal.SIG_IGN)
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.signal(signal.SIGALRM, signal.SIG_DFL)
            signal.alarm(math.ceil(seconds) + 1)
            own_limit = _limit_memory(memory)
            message: tuple[str, Any] = ("ok", fn(*args))
        except MediaError as exc:
            message = ("media_error", (exc.code, exc.detail))
            if exc.code == OUT_OF_MEMORY and own_limit:
                message = _beyond(memory)
        except MemoryError:
            # Past the child's own limit, the file asked for more than a decode may
            # ever take; past the process's lower one (a ulimit), memory was short now.
            out = ("media_error", (OUT_OF_MEMORY, f"{what}: out of memory"))
            message = _beyond(memory) if own_limit else out
        except BaseException as exc:  # reported to the parent, which decides
            message = ("error", f"{type(exc).__name__}: {exc}")
        data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        view = memoryview(len(data).to_bytes(8, "big") + data)
        while view:
            view = view[os.write(write_end, view) :]
    except BaseException:
        status = 1
    finally:
        os._exit(status)


def _beyond(memory: int) -> tuple[str, Any]:
    return ("error", f"out of memory (beyond the {memory >> 20} MiB a decode may take)")


def _limit_memory(extra: int) -> bool:
    """Cap the address space at what the child has plus ``extra``; False when the
    process's hard limit is lower, and so the one that binds."""
    # RLIMIT_AS counts the address space inherited from the parent too
    with open("/proc/self/statm") as statm:
        inherited = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = inherited + extra
    _, hard = resource.getrlimit(resource.RLIMIT_AS)
    own = hard == resource.RLIM_INFINITY or limit <= hard
    resource.setrlimit(resource.RLIMIT_AS, (limit if own else hard, hard))
    return own


def _read_message(fd: int, pid: int, deadline: float) -> bytes | None:
    """The child's message (length-prefixed), b"" when it died without one, or None at
    the deadline. Not read until end of file: a sibling child forked by another thread
    meanwhile holds a copy of this pipe's write end until it ends (fork copies every
    descriptor), so the end of file could come only when a hanging sibling is killed.
    The child's own exit is watched through a pidfd instead."""
    pidfd = os.pidfd_open(pid)
    os.set_blocking(fd, False)
    received = bytearray()
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd, pidfd], [], [], remaining)
            end_of_file = _drain(fd, received)
            message = _complete(received)
            if message is not None:
                return message
            if pidfd in ready or end_of_file:
                # It exited (everything it wrote is drained by now) without a whole
                # message: it crashed.
                return b""
    finally:
        os.close(pidfd)


def _drain(fd: int, into: bytearray) -> bool:
    """Append what the pipe holds now; True at its end of file."""
    try:
        while chunk := os.read(fd, _CHUNK):
            into += chunk
    except BlockingIOError:
        return False
    return True


def _complete(received: bytearray) -> bytes | None:
    if len(received) < 8:
        return None
    size = int.from_bytes(received[:8], "big")
    return bytes(received[8 : 8 + size]) if len(received) >= 8 + size else None


def _kill_and_reap(pid: int) -> None:
    # SIGKILL is harmless to a child that has exited: until reaped, its pid is not reused
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(ChildProcessError):  # SIGCHLD ignored: reaped already
        os.waitpid(pid, 0)
