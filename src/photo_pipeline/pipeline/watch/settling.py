"""Changed paths waiting until their files have settled: size and mtime unchanged for
``settle_seconds`` as this process observed them (a copy keeping its source's mtime
still grows), and no process holding the file open for writing (``writers``). A
path that is gone settles at once (a deletion is final); a folder that arrived is
replaced by the files it holds, each settling on its own (inotify misses what was
written in a new folder before its watch was added)."""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from photo_pipeline.pipeline.ingest.walk import Fingerprint, walk
from photo_pipeline.pipeline.watch.writers import open_for_writing


@dataclass
class _Seen:
    fingerprint: Fingerprint | None  # None: not looked at yet
    stable_since: float  # when it was first seen with this fingerprint
    first_seen: float  # when its change was first seen (the watcher's lag)


class Settling:
    def __init__(
        self,
        root: str,
        settle_seconds: float,
        *,
        skip: Collection[str] = (),
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._root = root
        self._settle = settle_seconds
        self._skip = skip
        self._clock = clock
        self._pending: dict[str, _Seen] = {}

    def __len__(self) -> int:
        return len(self._pending)

    def oldest_age(self) -> float:
        """Seconds since the oldest pending change was seen (0: none pending)."""
        if not self._pending:
            return 0.0
        return self._clock() - min(seen.first_seen for seen in self._pending.values())

    def add(self, relatives: Iterable[str]) -> None:
        """Paths (relative to the root) that changed; one already pending goes on
        settling (each look compares its fingerprint with the last)."""
        now = self._clock()
        for relative in relatives:
            if relative not in self._pending:
                self._pending[relative] = _Seen(None, now, now)

    def settled(self) -> list[str]:
        """The pending paths that settled, taken out of the pending ones: files, and
        paths that are gone."""
        now = self._clock()
        candidates: list[str] = []
        gone: list[str] = []
        for relative, seen in list(self._pending.items()):
            info = _lstat(os.path.join(self._root, relative))
            if info is None:
                gone.append(relative)
                continue
            if stat.S_ISDIR(info.st_mode):
                del self._pending[relative]
                self._expand(relative, seen.first_seen)
                continue
            fingerprint = (info.st_size, info.st_mtime_ns, info.st_ino)
            if fingerprint != seen.fingerprint:
                seen.fingerprint, seen.stable_since = fingerprint, now
            elif now - seen.stable_since >= self._settle:
                candidates.append(relative)
        if candidates:
            absolute = {os.path.join(self._root, r): r for r in candidates}
            written = {absolute[path] for path in open_for_writing(absolute)}
            candidates = [r for r in candidates if r not in written]
        taken = gone + candidates
        for relative in taken:
            del self._pending[relative]
        return taken

    def _expand(self, folder: str, first_seen: float) -> None:
        """A folder's files become pending paths (its subfolders' too)."""
        now = self._clock()
        for relative, fingerprint in walk(self._root, skip=self._skip, within=[folder]):
            if fingerprint is not None and relative not in self._pending:
                self._pending[relative] = _Seen(None, now, first_seen)


def _lstat(path: str) -> os.stat_result | None:
    try:
        return os.lstat(path)
    except OSError:
        return None
