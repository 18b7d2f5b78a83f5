"""What a handler sees of its job: params, items, result reporting, stop checks."""

from __future__ import annotations

import functools
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from typing import Any

from sqlalchemy.orm import Session, sessionmaker

from photo_pipeline.db.text import storable
from photo_pipeline.jobs.budget import MemoryBudget
from photo_pipeline.jobs.errors import ItemError, JobConflict
from photo_pipeline.jobs.service import JobService, JobSnapshot
from photo_pipeline.jobs.states import ItemState, JobState

ItemFunction = Callable[[dict[str, Any], str], Any]
ResultCallback = Callable[[str, Any], None]
# Estimates the peak bytes an item will use while it runs (from its params and key).
ItemWeigher = Callable[[dict[str, Any], str], int]
# Writes a handler's own rows inside the transaction that reports its items done.
RowWriter = Callable[[Session], None]


class LeaseLost(Exception):
    """The job was taken from this worker (lease expired, fenced out): stop at once,
    write nothing more."""


class JobContext:
    """Handed to a handler. Item results are buffered and written in batches (one
    fenced transaction per ``flush_size`` items or ``flush_seconds``), so a job of
    20,000 photos makes hundreds of commits, not 20,000."""

    def __init__(
        self,
        service: JobService,
        job: JobSnapshot,
        worker_id: str,
        *,
        shutdown: threading.Event,
        pool: Executor | None = None,
        pool_size: int = 1,
        budget: MemoryBudget | None = None,
        batch_size: int = 50,
        flush_size: int = 50,
        flush_seconds: float = 1.0,
    ) -> None:
        self.job = job
        self.job_id: str = job["id"]
        self.params: dict[str, Any] = job["params"]
        self.fencing_token: int = job["fencing_token"]
        self.worker_id = worker_id
        self.log = logging.LoggerAdapter(
            logging.getLogger("photo_pipeline.job"),
            {"job_id": self.job_id, "job_type": job["job_type"], "worker_id": worker_id},
        )
        self._service = service
        self._shutdown = shutdown
        self._cancel = threading.Event()
        self._lost = threading.Event()
        self._pool = pool
        self._pool_size = pool_size
        self._budget = budget if budget is not None and budget.limit is not None else None
        self._batch_size = batch_size
        self._flush_size = flush_size
        self._flush_seconds = flush_seconds
        self._pending: list[tuple[str, ItemState, tuple[str, str] | None]] = []
        self._last_flush = time.monotonic()
        self._before_flush: list[Callable[[], RowWriter | None]] = []

    # ── stop signals ───────────────────────────────────────────────────────────
    @property
    def session_factory(self) -> sessionmaker[Session]:
        """The database the job lives in, for handlers that write their own rows."""
        return self._service.session_factory

    @property
    def cancelled(self) -> bool:
        """A cancel was requested: stop taking items; finished ones stay finished."""
        return self._cancel.is_set()

    @property
    def lease_lost(self) -> bool:
        return self._lost.is_set()

    @property
    def should_stop(self) -> bool:
        return self._cancel.is_set() or self._lost.is_set() or self._shutdown.is_set()

    def confirm_lease(self) -> None:
        """Raise ``LeaseLost`` unless this worker holds the job now, as the database
        says (not as the last heartbeat did): before a step on the user's files that
        cannot be taken back, so that a worker that was stopped past its lease (and
        whose job another worker took over) does not go on moving them."""
        if self._lost.is_set() or not self._service.holds_lease(
            self.job_id, self.worker_id, self.fencing_token
        ):
            self._lost.set()
            raise LeaseLost(f"job {self.job_id} is no longer held by {self.worker_id}")

    def observe(self, state: JobState | None) -> None:
        """Take in the job's state as the coordinator last reported it (None: the
        lease is gone)."""
        if state is None:
            self._lost.set()
        elif state is JobState.CANCELLING:
            self._cancel.set()

    # ── items ──────────────────────────────────────────────────────────────────
    def items(self) -> Iterator[str]:
        """Yield the job's queued items, marking each batch running first. Stops
        early on cancel, shutdown or a lost lease."""
        after_id = 0  # items are taken in id order; no need to walk past ones again
        while not self.should_stop:
            self.flush()
            page = self._service.items(
                self.job_id, states=[ItemState.QUEUED], after_id=after_id, limit=self._batch_size
            )
            if not page:
                return
            after_id = page[-1]["id"]
            keys = [item["item_key"] for item in page]
            self._write([(key, ItemState.RUNNING) for key in keys])
            for key in keys:
                if self.should_stop:
                    return  # the rest stay running: release or cancel settles them
                yield key

    def succeeded_items(self) -> Iterator[str]:
        """The keys of the job's items that succeeded, in this run or an earlier one
        (a resumed job's handler may owe its finished items a last step)."""
        after_id = 0
        while page := self._service.items(
            self.job_id, states=[ItemState.SUCCEEDED], after_id=after_id, limit=1000
        ):
            after_id = page[-1]["id"]
            yield from (item["item_key"] for item in page)

    def succeed(self, item_key: str) -> None:
        self._pending.append((item_key, ItemState.SUCCEEDED, None))
        self._flush_if_due()

    def fail(self, item_key: str, code: str, message: str = "") -> None:
        self._pending.append((item_key, ItemState.FAILED, (code, storable(message))))
        self._flush_if_due()

    def add_items(self, item_keys: Iterable[str]) -> int:
        """Add items discovered while running; returns how many were new."""
        try:
            return self._service.add_items(self.job_id, item_keys, fencing_token=self.fencing_token)
        except JobConflict as exc:
            self._lost.set()
            raise LeaseLost(str(exc)) from exc

    def map(
        self,
        function: ItemFunction,
        *,
        on_result: ResultCallback | None = None,
        weigh: ItemWeigher | None = None,
    ) -> None:
        """Run ``function(params, item_key)`` for every queued item, in the worker's
        pool when it has one (``function`` must then be importable by name).

        ``ItemError`` (from ``function`` or ``on_result``) fails the item;
        ``on_result(item_key, value)`` runs here, in the worker, before the item is
        reported done; any other exception fails the job. An item whose ``ItemError``
        is ``transient`` (memory ran short) runs once more after the others, alone
        (with the whole memory budget), and fails only if that fails too.

        ``weigh(params, item_key)``, when given, estimates the bytes an item will use
        at its peak: the item starts only once that fits the worker's memory budget,
        shared by every job of the worker (an item above the whole budget runs alone).
        It runs here, before the item is handed out, so it should read no more than a
        header. An ``ItemError`` from it fails the item unrun.
        """
        budget = self._budget if weigh is not None else None
        pool = self._pool
        again: list[str] = []  # short of memory: run once more, alone, at the end
        if pool is None:
            for key in self.items():
                charge = self._reserve(budget, weigh, key)
                if charge is None:
                    continue
                if self._stopped_while_waiting(budget, charge):
                    break
                try:
                    call = functools.partial(function, self.params, key)
                    self._settle(key, call, on_result, again)
                finally:
                    if budget is not None:
                        budget.release(charge)
        else:
            in_flight: dict[Future[Any], str] = {}
            try:
                for key in self.items():
                    charge = self._reserve(budget, weigh, key)
                    if charge is None:
                        continue
                    if self._stopped_while_waiting(budget, charge):
                        break
                    in_flight[self._submit(pool, function, key, budget, charge)] = key
                    # Enough queued work that the pool stays busy while this thread
                    # writes a batch of results (bench/ingest.py measured it idling).
                    if len(in_flight) >= 2 * self._pool_size + self._flush_size:
                        self._collect(in_flight, on_result, again)
                while in_flight:
                    self._collect(in_flight, on_result, again)
            finally:
                for future in in_flight:
                    future.cancel()
        self._run_alone(again, function, on_result, budget)

    def before_flush(self, callback: Callable[[], RowWriter | None]) -> None:
        """Run ``callback`` before each write of item results, for a handler that
        buffers rows of its own per item. It prepares them (outside any transaction)
        and returns a writer, which runs inside the fenced transaction that reports
        the items done: a worker that lost its lease writes neither its rows nor its
        items. A callback that returns None has written whatever it had itself."""
        self._before_flush.append(callback)

    def flush(self) -> None:
        """Write the buffered item results (and the handler's rows) now. When a
        callback fails, the buffered results are dropped with the rows it was
        preparing: their items are not reported done without them, and run again."""
        try:
            writers = [writer for callback in self._before_flush if (writer := callback())]
        except BaseException:
            self._pending = []
            raise
        if self._pending or writers:
            batch, self._pending = self._pending, []
            self._write(batch, writers)
        self._last_flush = time.monotonic()

    # ── internals ──────────────────────────────────────────────────────────────
    def _reserve(
        self, budget: MemoryBudget | None, weigh: ItemWeigher | None, key: str
    ) -> int | None:
        """Wait until the item's estimate fits the budget; None: the item failed
        while weighed (reported here), do not run it."""
        if budget is None or weigh is None:
            return 0
        try:
            estimate = weigh(self.params, key)
        except ItemError as exc:
            self.fail(key, exc.code, exc.message)
            return None
        return budget.reserve(estimate)

    def _stopped_while_waiting(self, budget: MemoryBudget | None, charge: int) -> bool:
        """A stop that came while the item waited for the budget: it is not started
        (left running, like the rest of its page: release or cancel settles it)."""
        if budget is None or not self.should_stop:
            return False
        budget.release(charge)
        return True

    def _submit(
        self,
        pool: Executor,
        function: ItemFunction,
        key: str,
        budget: MemoryBudget | None,
        charge: int,
    ) -> Future[Any]:
        try:
            future = pool.submit(function, self.params, key)
        except BaseException:
            if budget is not None:
                budget.release(charge)
            raise
        if budget is not None:
            # Released as soon as the item ends, whichever thread notices: another
            # job waiting for the budget must not wait for this one to collect it.
            future.add_done_callback(lambda _done: budget.release(charge))
        return future

    def _collect(
        self,
        in_flight: dict[Future[Any], str],
        on_result: ResultCallback | None,
        again: list[str],
    ) -> None:
        done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
        for future in done:
            key = in_flight.pop(future)
            self._settle(key, future.result, on_result, again)

    def _run_alone(
        self,
        keys: list[str],
        function: ItemFunction,
        on_result: ResultCallback | None,
        budget: MemoryBudget | None,
    ) -> None:
        """Run each item that ran short of memory once more, one at a time and, under a
        budget, only once every other item of the worker has ended (it reserves the
        whole budget): what the others held is free by then. A stop leaves the rest
        running (release or cancel settles them; they run again)."""
        for key in keys:
            if self.should_stop:
                return
            charge = budget.reserve(budget.limit or 0) if budget is not None else 0
            if self._stopped_while_waiting(budget, charge):
                return
            try:
                call: Callable[[], Any] = functools.partial(function, self.params, key)
                if self._pool is not None:
                    call = self._pool.submit(function, self.params, key).result
                self._settle(key, call, on_result, None)
            finally:
                if budget is not None:
                    budget.release(charge)

    def _settle(
        self,
        key: str,
        result: Callable[[], Any],
        on_result: ResultCallback | None,
        again: list[str] | None,
    ) -> None:
        """Report one item done (or failed); a transient failure is put on ``again``
        instead, when given."""
        try:
            value = result()
            if on_result is not None:
                on_result(key, value)
        except ItemError as exc:
            if exc.transient and again is not None:
                again.append(key)
                return
            self.fail(key, exc.code, exc.message)
            return
        self.succeed(key)

    def _flush_if_due(self) -> None:
        if (
            len(self._pending) >= self._flush_size
            or time.monotonic() - self._last_flush >= self._flush_seconds
        ):
            self.flush()

    def _write(self, updates: list[tuple[Any, ...]], writers: Sequence[RowWriter] = ()) -> None:
        if self._lost.is_set():
            raise LeaseLost(f"job {self.job_id} is no longer held by {self.worker_id}")

        def write_rows(session: Session) -> None:
            for writer in writers:
                writer(session)

        try:
            state = self._service.set_items(
                self.job_id,
                updates,
                fencing_token=self.fencing_token,
                within=write_rows if writers else None,
            )
        except JobConflict as exc:
            self._lost.set()
            raise LeaseLost(str(exc)) from exc
        self.observe(state)
