"""``photo-pipeline watch``: the watchers of ``serve`` without the server, for a
machine that holds the folders but serves nothing (run a ``worker`` beside it, on a
machine that sees the folders, for the scans it queues)."""

from __future__ import annotations

import signal
from typing import Annotated

import typer

from photo_pipeline import logs
from photo_pipeline.cli.common import app, library_when_reachable


@app.command()
def watch(
    settle_seconds: Annotated[
        float | None,
        typer.Option(
            min=0,
            help="Seconds a file's size and mtime must stay the same before it is taken "
            "(default 2, PHOTO_PIPELINE_WATCH_SETTLE_SECONDS).",
        ),
    ] = None,
    poll_seconds: Annotated[
        float | None,
        typer.Option(
            min=0.1,
            help="How often a network mount (or a folder inotify cannot watch) is "
            "rescanned (default 60, PHOTO_PIPELINE_WATCH_POLL_SECONDS).",
        ),
    ] = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Watch every watched source nobody else watches (`import --watch`).

    Until SIGTERM/SIGINT, what settles in them is scanned."""
    from dataclasses import replace

    from photo_pipeline.pipeline.library.home import check_home
    from photo_pipeline.pipeline.watch.config import WatchConfig
    from photo_pipeline.pipeline.watch.service import WatchService

    logs.configure(log_level)
    config = WatchConfig.from_env()
    if settle_seconds is not None:
        config = replace(config, settle_seconds=settle_seconds)
    if poll_seconds is not None:
        config = replace(config, poll_seconds=poll_seconds)
    lib = library_when_reachable()
    check_home(lib.sessions, lib.settings.home)
    # Signals are waited for here, not handled: the threads inherit the mask, and a
    # handler setting an event the main thread waits on could deadlock (jobs.shutdown).
    stops = {signal.SIGTERM, signal.SIGINT}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    service = WatchService(lib, config)
    service.start()
    signal.sigwait(stops)
    service.stop()
