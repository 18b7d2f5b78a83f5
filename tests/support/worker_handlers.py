"""Job handlers for the worker tests, registered on the process-wide registry so
that `photo-pipeline worker --import tests.support.worker_handlers` serves them."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import ItemError, registry


def record_item(params: dict[str, Any], key: str) -> str:
    """The item's "work": append ``pid key`` to the run log, then apply its fate."""
    with open(params["log"], "a") as log:
        log.write(f"{os.getpid()} {key}\n")
    if params.get("item_seconds"):
        time.sleep(params["item_seconds"])  # simulated work, not synchronisation
    if key.startswith("bad"):
        raise ItemError("corrupt_file", f"{key} is not a photo")
    if key == params.get("crash_on"):
        raise RuntimeError(f"handler bug on {key}")
    return key.upper()


@registry.handler("test.record")
def record(ctx: JobContext) -> None:
    results = Path(ctx.params["log"]).with_suffix(".results")

    def keep(key: str, value: str) -> None:
        with open(results, "a") as out:
            out.write(f"{key} {value}\n")

    if ctx.params.get("flush_fails"):

        def broken_writer() -> None:
            raise RuntimeError("the batch's writer broke")

        ctx.before_flush(broken_writer)
    ctx.map(record_item, on_result=keep)


@registry.handler("test.discover")
def discover(ctx: JobContext) -> None:
    """Adds its items while running, as a scan does."""
    ctx.add_items([f"found-{n}" for n in range(ctx.params["count"])])
    for key in ctx.items():
        ctx.succeed(key)
