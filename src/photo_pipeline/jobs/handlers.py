"""Job handlers: what runs a job of each type, registered by name."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from photo_pipeline.jobs import _checks as check
from photo_pipeline.jobs.errors import ItemError

if TYPE_CHECKING:
    from photo_pipeline.jobs.context import JobContext

# ItemError lives with the other errors (jobs.errors); handlers import it from here.
__all__ = ["Handler", "HandlerRegistry", "ItemError", "UnknownJobType", "registry"]

Handler = Callable[["JobContext"], None]


class UnknownJobType(LookupError):
    pass


class HandlerRegistry:
    """Maps job types to handlers. A handler is a plain function of a ``JobContext``:
    it iterates the job's items and reports each one; it must be safe to run an
    item again (a crash between doing and reporting it re-runs it)."""

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._providers: dict[str, str] = {}  # job type -> module registering it (defer)
        # job type -> what says why it cannot run on this machine (None: it can)
        self._requirements: dict[str, Callable[[], str | None]] = {}

    def register(self, job_type: str, handler: Handler) -> Handler:
        check.job_type(job_type)
        if self._handlers.get(job_type, handler) is not handler:
            raise ValueError(f"job type {job_type!r} already has a handler")
        self._handlers[job_type] = handler
        return handler

    def handler(self, job_type: str) -> Callable[[Handler], Handler]:
        """Decorator form of ``register``."""

        def decorate(function: Handler) -> Handler:
            return self.register(job_type, function)

        return decorate

    def defer(
        self, job_type: str, module: str, *, missing: Callable[[], str | None] | None = None
    ) -> None:
        """Name the module whose import registers ``job_type``'s handler: it is
        imported when a job of that type first runs, so a worker serves every type
        without loading what each needs (organize's worker, no image decoders).
        ``missing()``, when given, says in a sentence why the type cannot run on this
        machine (a package not installed), or None when it can: a worker that is not
        told its types leaves such jobs to one that can run them."""
        check.job_type(job_type)
        self._providers[job_type] = module
        if missing is not None:
            self._requirements[job_type] = missing

    def missing(self, job_type: str) -> str | None:
        """Why ``job_type`` cannot run here (None: it can, or nothing is required)."""
        requirement = self._requirements.get(job_type)
        return None if requirement is None else requirement()

    def runnable_types(self) -> list[str]:
        """The job types this machine can run: every one whose requirements are met."""
        return [t for t in self.job_types() if self.missing(t) is None]

    def get(self, job_type: str) -> Handler:
        if job_type not in self._handlers and job_type in self._providers:
            importlib.import_module(self._providers[job_type])
        try:
            return self._handlers[job_type]
        except KeyError:
            raise UnknownJobType(f"no handler for job type {job_type!r}") from None

    def job_types(self) -> list[str]:
        return sorted(self._handlers.keys() | self._providers.keys())

    def __contains__(self, job_type: Any) -> bool:
        return job_type in self._handlers or job_type in self._providers


# The process-wide registry that `photo-pipeline worker` serves.
registry = HandlerRegistry()
