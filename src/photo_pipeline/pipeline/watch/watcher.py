"""One source's watcher: changes come from inotify (``watchfiles``) on a local disk,
or from a cheap periodic rescan (size, mtime, inode against the catalogue, as a scan
compares) on a network or FUSE mount, where inotify is unavailable, or where its
watch limit is reached; the reason is logged once. Changed paths wait in ``settling``
until settled, then go to ``batches``. The first pass, when the watcher starts, is a
cheap rescan: what changed while no watcher ran is caught then; under inotify one runs
every ``rescan_seconds`` as well (events lost to an overflowing queue, a scan that
failed for good).

It runs while it holds the source's lease (``leases``), renewing it every third of
the lease; a watcher that lost its lease stops at once."""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from typing import Any

from photo_pipeline.media.errors import TRANSIENT_CODES
from photo_pipeline.pipeline.files import paths
from photo_pipeline.pipeline.ingest.walk import below, listable, walk
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.library.catalog import FAILED, MISSING
from photo_pipeline.pipeline.watch import batches, mounts
from photo_pipeline.pipeline.watch.config import WatchConfig
from photo_pipeline.pipeline.watch.leases import Leases, Status
from photo_pipeline.pipeline.watch.settling import Settling

log = logging.getLogger(__name__)

INOTIFY, POLL = "inotify", "poll"


class SourceWatcher:
    def __init__(
        self,
        lib: Library,
        source: dict[str, Any],
        leases: Leases,
        config: WatchConfig,
        stop: threading.Event,
    ) -> None:
        self.source = {"id": source["id"], "path": source["path"]}
        self.mode: str = INOTIFY
        self.reason: str | None = None
        self._lib = lib
        self._leases = leases
        self._config = config
        self._stop = stop  # set by whoever stops this watcher
        self._root = source["path"]
        self._skip = self._sources_inside()
        self._settling = Settling(self._root, config.settle_seconds, skip=self._skip)
        self._ready: list[str] = []  # settled, not yet queued (a scan of it was active)
        self._ready_since = 0.0
        self.scans: list[str] = []  # the scans it queued
        self._root_gone = False  # the folder was not there at the last rescan (logged)

    def initial_mode(self) -> tuple[str, str | None]:
        """The mode the source's place asks for: poll on a network mount."""
        if self._config.force_poll:
            return POLL, "polling asked for (PHOTO_PIPELINE_WATCH_POLL)"
        reason = mounts.poll_reason(self._root)
        return (POLL, reason) if reason else (INOTIFY, None)

    def status(self) -> Status:
        ages = [self._settling.oldest_age()]
        if self._ready:
            ages.append(time.monotonic() - self._ready_since)
        pending = len(self._settling) + len(self._ready)
        return Status(self.mode, self.reason, pending, max(ages) if pending else 0.0)

    def run(self) -> None:
        """Watch until stopped or the lease is lost; the lease is given back at the end."""
        self.mode, self.reason = self.initial_mode()
        events: Iterator[set[tuple[Any, str]]] | None = None
        if self.mode == INOTIFY:
            events = self._start_inotify()
        if self.mode == POLL:
            log.warning(
                "source %s: rescanned every %g s, not watched: %s",
                self._root,
                self._config.poll_seconds,
                self.reason,
            )
        try:
            self._loop(events)
        finally:
            if events is not None:
                close = getattr(events, "close", None)
                if close is not None:
                    close()
            self._leases.release(self.source["id"])

    def _start_inotify(self) -> Iterator[set[tuple[Any, str]]] | None:
        """The stream of changes, its watches in place; None (and poll) when inotify
        cannot watch the folder (unavailable, or its watch limit reached)."""
        import watchfiles

        tick = max(1, round(self._config.tick_seconds * 1000))
        stream = watchfiles.watch(
            self._root,
            watch_filter=None,  # the walk's own rules decide (walk.listable)
            stop_event=self._stop,
            debounce=tick,
            step=min(50, tick),
            rust_timeout=tick,
            yield_on_timeout=True,
            raise_interrupt=False,
            # Not ignored: with it, a watch limit reached is ignored too, silently, and
            # the folders past it go unwatched. A folder it may not read polls instead.
            ignore_permission_denied=False,
        )
        try:
            first = next(stream)  # the watches are set up before it returns
        except StopIteration:
            return None
        except (OSError, RuntimeError) as exc:
            self.mode, self.reason = POLL, f"inotify cannot watch it: {exc}"
            return None
        self._changed_paths(first)
        return stream

    def _loop(self, events: Iterator[set[tuple[Any, str]]] | None) -> None:
        first = True
        next_poll = 0.0
        next_beat = time.monotonic() + self._config.lease_seconds / 3
        while not self._stop.is_set():
            now = time.monotonic()
            if first or (now >= next_poll and not self._scanning()):
                # The first pass, each poll, and now and then under inotify too (what an
                # overflowing event queue or a failed scan missed): a cheap rescan.
                self._settling.add(self._rescan())
                first = False
                every = self._config.rescan_seconds if events else self._config.poll_seconds
                next_poll = now + every
            if events is not None:
                try:
                    self._changed_paths(next(events))
                except StopIteration:
                    break  # stopped
                except (OSError, RuntimeError) as exc:
                    events = None
                    self.mode, self.reason = POLL, f"inotify failed: {exc}"
                    log.warning("source %s: polled from now on: %s", self._root, self.reason)
                    next_poll = 0.0
            else:
                self._stop.wait(self._config.tick_seconds)
            self._hand_over()
            if time.monotonic() >= next_beat:
                if not self._leases.renew(self.source["id"], self.status()):
                    log.warning("source %s: watcher lease lost; this watcher stops", self._root)
                    return
                next_beat = time.monotonic() + self._config.lease_seconds / 3

    def _changed_paths(self, changes: set[tuple[Any, str]]) -> None:
        relatives = set()
        for _change, path in changes:
            relative = os.path.relpath(path, self._root)
            if relative != os.curdir and not relative.startswith(os.pardir):
                relatives.add(relative)
        if relatives:
            self._settling.add(listable(self._root, relatives, self._skip))

    def _hand_over(self) -> None:
        """Queue a scan of what settled (with what waits from before), unless a scan of
        the source is active: then it waits for the next tick."""
        settled = self._settling.settled()
        if settled:
            if not self._ready:
                self._ready_since = time.monotonic()
            known = set(self._ready)
            self._ready.extend(r for r in settled if r not in known)
        if not self._ready:
            return
        if self._scanning():
            return  # a scan of the source is active: after it
        batch = self._ready[: self._config.max_batch]
        scan_id = batches.queue_scan(self._lib.service, self._lib.settings, self.source, batch)
        if scan_id is None:
            return  # a scan of the source is active: after it
        self.scans.append(scan_id)
        log.info("source %s: scan %s of %d changed paths", self._root, scan_id, len(batch))
        del self._ready[: len(batch)]
        self._ready_since = time.monotonic()

    def _scanning(self) -> bool:
        return batches.scan_active(self._lib.service, self.source["id"])

    def _rescan(self) -> list[str]:
        """The paths that differ from the catalogue: new, changed, gone (the scan's
        comparison, without reading a file)."""
        if not os.path.isdir(self._root):
            # Gone or unmounted: its files are not taken for deleted by every poll.
            if not self._root_gone:
                log.warning("source %s: the folder is not there; not rescanned", self._root)
            self._root_gone = True
            return []
        self._root_gone = False
        known = self._lib.catalog.known_files(self.source["id"])
        unreadable: list[str] = []
        changed = []
        for relative, fingerprint in walk(self._root, skip=self._skip, unreadable=unreadable):
            before = known.pop(paths.to_text(relative), None)
            if (
                before is None
                or before.state == MISSING
                or before[:3] != fingerprint
                or (before.state == FAILED and before.error_code in TRANSIENT_CODES)
            ):
                changed.append(relative)
        gone = [
            paths.from_text(stored)
            for stored, file in known.items()
            if file.state != MISSING and not below(paths.from_text(stored), unreadable)
        ]
        return changed + gone

    def _sources_inside(self) -> list[str]:
        """The registered sources below this one, relative to it: their files are theirs."""
        root = self._root
        return [
            os.path.relpath(path, root)
            for path in self._lib.catalog.source_paths()
            if path != root and path.startswith(root.rstrip("/") + "/")
        ]
