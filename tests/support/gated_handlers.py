"""Job handlers for the coordinator's worker tests (`--import
tests.support.gated_handlers`): a job that holds its slot until the test
opens a gate, and one that finishes at once."""

from __future__ import annotations

import threading
from pathlib import Path

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import registry

_GATE_CHECK_SECONDS = 0.02


@registry.handler("test.gated")
def gated(ctx: JobContext) -> None:
    """Mark the items running, then hold the job until the file ``params["gate"]``
    exists (a long scan, say); stop early on cancel or a lost lease."""
    gate = Path(ctx.params["gate"])
    for key in ctx.items():
        ctx.flush()  # the item is running in the database before we wait
        idle = threading.Event()
        while not gate.exists() and not ctx.should_stop:
            idle.wait(_GATE_CHECK_SECONDS)  # the handler's own wait for its gate
        if ctx.should_stop:
            return
        ctx.succeed(key)


@registry.handler("test.quick")
def quick(ctx: JobContext) -> None:
    for key in ctx.items():
        ctx.succeed(key)
