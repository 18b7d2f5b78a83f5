"""Job handlers for the memory budget tests, on a registry of their own. Their item
functions live here, importable by name, so a process pool can run them too."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

from photo_pipeline.jobs.context import JobContext
from photo_pipeline.jobs.handlers import HandlerRegistry, ItemError
from photo_pipeline.media.cost import check_cost, render_cost
from photo_pipeline.media.metadata import read_metadata
from photo_pipeline.media.render import RenderSettings, render_file

handlers = HandlerRegistry()
_GATE_CHECK_SECONDS = 0.005
_GATE_LIMIT_SECONDS = 120


def gated_item(params: dict[str, Any], key: str) -> str:
    """Say the item started (a file), then hold it until the test opens its gate: the
    test sees which items run at once, whatever the executor."""
    folder = Path(params["folder"])
    (folder / f"started-{key}").touch()
    gate, idle = folder / f"go-{key}", threading.Event()
    deadline = time.monotonic() + _GATE_LIMIT_SECONDS
    while not gate.exists():
        if time.monotonic() > deadline:
            raise RuntimeError(f"the gate of {key} never opened")
        idle.wait(_GATE_CHECK_SECONDS)  # waiting for the test's gate, not for time
    return key


def weight_from_params(params: dict[str, Any], key: str) -> int:
    if key not in params["weights"]:
        raise ItemError("unknown_weight", f"no weight for {key}")
    return int(params["weights"][key])


@handlers.handler("test.weighed")
def weighed(ctx: JobContext) -> None:
    ctx.map(gated_item, weigh=weight_from_params)


def decode_item(params: dict[str, Any], path: str) -> str:
    """What a scan and a render decode of one photo, between two lines of a log
    (appended whole: the order of the lines is the order of the events)."""
    log = os.open(params["log"], os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    try:
        os.write(log, f"start {path}\n".encode())
        read_metadata(Path(path))
        render_file(path, RenderSettings())
        os.write(log, f"end {path}\n".encode())
    finally:
        os.close(log)
    return path


def decode_weight(_params: dict[str, Any], path: str) -> int:
    return max(render_cost(path), check_cost(path))


@handlers.handler("test.decode")
def decode(ctx: JobContext) -> None:
    ctx.map(decode_item, weigh=decode_weight)


def crowded_item(params: dict[str, Any], key: str) -> str:
    """Short of memory while another item runs beside it, as a large decode would be:
    the items of ``params["meet"]`` first wait until they all run, and then fail with a
    transient ``out_of_memory``; on a later run an item fails so if any other item is
    running then, and those of ``params["short"]`` always do. Each run is written to
    ``runs-KEY`` (crowded, alone or short)."""
    folder = Path(params["folder"])
    runs = folder / f"runs-{key}"
    first = not runs.exists()
    running = folder / f"running-{key}"
    running.touch()
    try:
        if key in params["short"]:
            outcome = "short"
        elif first and key in params["meet"]:
            (folder / f"started-{key}").touch()
            deadline = time.monotonic() + _GATE_LIMIT_SECONDS
            idle = threading.Event()
            while not all((folder / f"started-{other}").exists() for other in params["meet"]):
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{key} never met the others")
                idle.wait(_GATE_CHECK_SECONDS)  # waiting for the others, not for time
            outcome = "crowded"
        else:
            others = [p.name for p in folder.glob("running-*") if p != running]
            outcome = "crowded" if others else "alone"
        with runs.open("a") as log:
            log.write(f"{outcome}\n")
        if outcome != "alone":
            raise ItemError("out_of_memory", f"{key}: {outcome}", transient=True)
        return key
    finally:
        running.unlink()


@handlers.handler("test.crowded")
def crowded(ctx: JobContext) -> None:
    ctx.map(crowded_item, weigh=lambda _params, _key: 1)
