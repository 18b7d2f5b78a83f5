"""The watchers of one process (``serve``, ``watch``): every few seconds it looks for
watched sources whose lease nobody holds (a new one, or one whose watcher died, here
or on another host) and takes them, a thread per source; a source no longer watched
(or forgotten) has its watcher stopped. Stopping the service stops them all and gives
their leases back, for another process to take at once."""

from __future__ import annotations

import logging
import threading
from typing import Any

from sqlalchemy import select

from photo_pipeline.db import read_session
from photo_pipeline.db.schema import sources
from photo_pipeline.pipeline.library import Library
from photo_pipeline.pipeline.watch.config import WatchConfig
from photo_pipeline.pipeline.watch.leases import Leases, Status, new_holder_id
from photo_pipeline.pipeline.watch.watcher import SourceWatcher

log = logging.getLogger(__name__)


class WatchService:
    def __init__(self, lib: Library, config: WatchConfig | None = None) -> None:
        self._lib = lib
        self._config = config or WatchConfig.from_env()
        self.holder = new_holder_id()
        self._leases = Leases(lib.sessions, self.holder, self._config.lease_seconds)
        self.stop_event = threading.Event()
        self._running: dict[int, tuple[SourceWatcher, threading.Event, threading.Thread]] = {}
        self._thread: threading.Thread | None = None
        self._failing = False  # the database did not answer (logged once)

    def watching(self) -> dict[int, SourceWatcher]:
        """The watchers running now, by source id."""
        return {
            source_id: watcher
            for source_id, (watcher, _, thread) in list(self._running.items())
            if thread.is_alive()
        }

    def start(self) -> None:
        """Run in a thread of its own (``serve``)."""
        self._thread = threading.Thread(target=self.run, name="watch-service", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self.stop_event.set()
        if self._thread is not None:
            self._thread.join(timeout=self._config.lease_seconds)

    def run(self) -> None:
        """Take and watch sources until ``stop_event`` is set."""
        log.info("watcher %s started", self.holder)
        try:
            while not self.stop_event.is_set():
                try:
                    self._step()
                    if self._failing:
                        log.info("watcher %s: the database answers again", self.holder)
                    self._failing = False
                except Exception as exc:  # the database away: try again at the next step
                    if not self._failing:
                        log.warning("watcher %s: cannot look for sources: %s", self.holder, exc)
                    self._failing = True
                self.stop_event.wait(self._config.acquire_seconds)
        finally:
            for _, stop, _ in self._running.values():
                stop.set()
            for _, _, thread in self._running.values():
                thread.join(timeout=self._config.lease_seconds)
            log.info("watcher %s stopped", self.holder)

    def _step(self) -> None:
        watched = {row["id"]: row for row in self._watched_sources()}
        for source_id, (_, stop, thread) in list(self._running.items()):
            if not thread.is_alive():
                del self._running[source_id]  # lease lost, or it failed: taken again below
            elif source_id not in watched:
                stop.set()  # no longer watched: its watcher gives the lease back
        for source_id, source in watched.items():
            if source_id in self._running or self.stop_event.is_set():
                continue
            stop = threading.Event()
            watcher = SourceWatcher(self._lib, source, self._leases, self._config, stop)
            mode, reason = watcher.initial_mode()
            if not self._leases.acquire(source_id, Status(mode, reason)):
                continue  # another watcher holds it
            thread = threading.Thread(
                target=self._watch, args=(watcher,), name=f"watch-{source_id}", daemon=True
            )
            self._running[source_id] = (watcher, stop, thread)
            log.info("watcher %s: watching source %s %s", self.holder, source_id, source["path"])
            thread.start()

    def _watch(self, watcher: SourceWatcher) -> None:
        try:
            watcher.run()
        except Exception:
            log.exception("watcher of source %s failed", watcher.source["path"])

    def _watched_sources(self) -> list[dict[str, Any]]:
        query = select(sources.c.id, sources.c.path).where(sources.c.watch.is_(True))
        with read_session(self._lib.sessions) as session:
            return [dict(row._mapping) for row in session.execute(query)]
