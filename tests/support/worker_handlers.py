"""Job handlers for the worker tests, registered on the process-wide registry so
that `photo-pipeline worker --import tests.support.worker_handlers` serves them."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from photo_pipeline.jobs.context import JobContext, RowWriter
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
    """Each item's value goes to ``<log>.results``; with ``writer_fails`` (a count),
    items also get rows (``<log>.rows``) that a batch writer writes as their results
    are flushed, and that writer's preparation breaks its first ``writer_fails`` times
    (over every attempt of the job), after taking the batch (as the scan's does)."""
    results = Path(ctx.params["log"]).with_suffix(".results")
    rows = Path(ctx.params["log"]).with_suffix(".rows")
    batch: list[str] = []
    broken = Path(ctx.params["log"]).with_suffix(".broken")  # one line per failure

    def keep(key: str, value: str) -> None:
        with open(results, "a") as out:
            out.write(f"{key} {value}\n")
        batch.append(key)

    def writer() -> RowWriter | None:
        if not batch:
            return None
        keys = batch.copy()
        batch.clear()
        failed = len(broken.read_text().splitlines()) if broken.exists() else 0
        if failed < ctx.params["writer_fails"]:
            with open(broken, "a") as out:
                out.write("broke\n")
            raise RuntimeError("the batch's writer broke")

        def write(_session: Session) -> None:
            with open(rows, "a") as out:
                out.writelines(f"{key}\n" for key in keys)

        return write

    if "writer_fails" in ctx.params:
        ctx.before_flush(writer)
    ctx.map(record_item, on_result=keep)


@registry.handler("test.discover")
def discover(ctx: JobContext) -> None:
    """Adds its items while running, as a scan does."""
    ctx.add_items([f"found-{n}" for n in range(ctx.params["count"])])
    for key in ctx.items():
        ctx.succeed(key)
