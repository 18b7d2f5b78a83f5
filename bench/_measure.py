"""What the benchmarks read of a process: CPU seconds and peak resident memory."""

from __future__ import annotations

import resource


def cpu_seconds() -> float:
    """CPU time (user + system) of this process (all threads) and of its children that
    have been waited for."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_kb() -> int:
    """VmHWM: this process's own peak RSS in KiB (ru_maxrss also counts, after an exec,
    the memory of the parent that forked it)."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def peak_rss_mb() -> float:
    return peak_rss_kb() / 1024
