"""Commands that run work: ``worker`` and ``workers``."""

from __future__ import annotations

import importlib
import os
from typing import Annotated

import typer
from rich.table import Column, Table

from photo_pipeline import logs
from photo_pipeline.cli.common import (
    JOBS_PANEL,
    JsonOption,
    app,
    console,
    library,
    library_when_reachable,
    loaded_code_frozen,
    print_json,
)
from photo_pipeline.cli.shown import shown

# jobs.runtime.DEFAULT_JOBS, written out so that `--help` need not load the
# coordinator (tests/unit/cli/test_cli_startup.py checks they agree).
DEFAULT_JOBS = 4

ImportOption = Annotated[
    list[str] | None,
    typer.Option("--import", help="Extra module registering job handlers (repeatable)."),
]


def memory_size(text: str) -> int:
    """``1GiB``, ``512MB``, ``2g`` or a number of bytes; 0 means no limit."""
    from pydantic import ByteSize, TypeAdapter, ValidationError  # only when given

    try:
        return int(TypeAdapter(ByteSize).validate_python(text.strip()))
    except ValidationError:
        raise typer.BadParameter(
            f"{text!r} is no size: use e.g. 1GiB, 512MB or a number of bytes (0: no limit)"
        ) from None


MemoryBudgetOption = Annotated[
    int | None,
    typer.Option(
        parser=memory_size,
        metavar="SIZE",
        help="Memory the items in flight may use together, by their estimates (e.g. 1GiB; "
        "0: no limit); huge images then run fewer at a time. Default: half the "
        "machine's memory, less each pool process's.",
    ),
]


def load_handlers(modules: list[str]) -> None:
    """Register the built-in job types, then those of any extra modules."""
    importlib.import_module("photo_pipeline.pipeline.job_types")
    for module in modules:
        importlib.import_module(module)


@app.command(rich_help_panel=JOBS_PANEL)
def worker(
    concurrency: Annotated[
        int | None,
        typer.Option(min=1, max=256, help="Items processed in parallel (default: the CPU count)."),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "--jobs", min=1, max=64, help="Jobs run at once; their items share the executor."
        ),
    ] = DEFAULT_JOBS,
    burst: Annotated[bool, typer.Option("--burst", help="Exit when no work is left.")] = False,
    types: Annotated[
        str | None, typer.Option(help="Comma-separated job types to serve (default: all).")
    ] = None,
    executor: Annotated[str, typer.Option(help="process or thread pool for items.")] = "thread",
    lease_seconds: Annotated[float, typer.Option(min=1, max=86_400)] = 30.0,
    poll_seconds: Annotated[float, typer.Option(min=0.01, max=60)] = 1.0,
    shutdown_seconds: Annotated[
        float, typer.Option(min=0, help="Grace period for in-flight items on SIGTERM/SIGINT.")
    ] = 10.0,
    batch_size: Annotated[
        int, typer.Option(min=1, max=10_000, help="Items per progress transaction.")
    ] = 50,
    memory_budget: MemoryBudgetOption = None,
    import_modules: ImportOption = None,
    log_level: Annotated[str, typer.Option(help="debug, info, warning or error.")] = "info",
) -> None:
    """Claim and run jobs until stopped (SIGTERM/SIGINT hand the job in hand back)."""
    if executor not in ("process", "thread"):
        raise typer.BadParameter(
            f"must be process or thread, got {executor!r}", param_hint="--executor"
        )
    from photo_pipeline.jobs.handlers import registry
    from photo_pipeline.jobs.runtime import Worker, WorkerConfig
    from photo_pipeline.pipeline.library.home import check_home

    logs.configure(log_level)
    load_handlers(import_modules or [])
    config = WorkerConfig(
        job_types=tuple(t.strip() for t in types.split(",") if t.strip()) if types else (),
        concurrency=concurrency or os.cpu_count() or 1,
        jobs=jobs,
        executor=executor,
        lease_seconds=lease_seconds,
        poll_seconds=poll_seconds,
        burst=burst,
        shutdown_seconds=shutdown_seconds,
        batch_size=batch_size,
        memory_budget=memory_budget,
    )
    if not (config.job_types or registry.job_types()):
        raise typer.BadParameter("no job types to serve: none are registered", param_hint="--types")
    lib = library_when_reachable()
    check_home(lib.sessions, lib.settings.home)
    try:
        runner = Worker(lib.service, lib.workers, registry, config)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--types") from exc
    runner.install_signal_handlers()
    with loaded_code_frozen():
        code = runner.run()
    raise typer.Exit(code)


@app.command("workers", rich_help_panel=JOBS_PANEL)
def list_workers(
    all_: Annotated[bool, typer.Option("--all", help="Include stopped and dead ones.")] = False,
    as_json: JsonOption = False,
) -> None:
    """Registered workers: id, host, pid, current jobs, started, last heartbeat."""
    rows = library().workers.list(include_finished=all_)
    if as_json:
        print_json(rows)
        return
    table = Table(
        Column("id", no_wrap=True),
        "host",
        "pid",
        "state",
        Column("current jobs", no_wrap=True),
        "started",
        "last heartbeat",
    )
    for row in rows:
        table.add_row(
            shown(row["id"]),
            shown(row["host"]),
            str(row["pid"]),
            row["state"],
            "\n".join(f"{shown(j['job_type'])} {j['id']}" for j in row["current_jobs"]) or "-",
            f"{row['started_at']:%Y-%m-%d %H:%M:%S}",
            f"{row['heartbeat_at']:%H:%M:%S}",
        )
    console.print(table if rows else "no workers")
