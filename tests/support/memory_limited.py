"""A process whose address space (RLIMIT_AS) is what it uses once loaded plus EXTRA MiB,
as a worker under ``ulimit -v`` has: a decode larger than that runs out of memory for
real, in libjpeg, libvips or Pillow, while everything else still fits.

``python -m tests.support.memory_limited EXTRA read SMALL PATH`` reads the photo SMALL
(the decoders' own lazy loading), limits itself and prints, as JSON, what each reader
made of PATH: ``{"render": CODE, "metadata": CODE}`` (``ok`` when it read);
``python -m tests.support.memory_limited EXTRA ARGS…`` runs ``photo-pipeline ARGS…``.
EXTRA ``unlimited`` sets no limit.

Everything a worker loads on first use is loaded before the limit is set (the
decoders, the place data, the database drivers), so that only the decodes need
memory beyond it. Run it with ``MALLOC_ARENA_MAX=1`` and ``VIPS_CONCURRENCY=1``
(``limited_environment``): a thread's own malloc arena (64 MiB of address space each)
and a thread per core in libvips would make the room left depend on the machine.
"""

from __future__ import annotations

import json
import os
import resource
import sys
from collections.abc import Callable
from pathlib import Path

# Loaded before the limit: the database driver and every job type's modules.
import psycopg  # noqa: F401

import photo_pipeline.pipeline.ingest.scan
import photo_pipeline.pipeline.job_types
import photo_pipeline.pipeline.near.similar
import photo_pipeline.pipeline.renditions.render  # noqa: F401
from photo_pipeline.cli import main
from photo_pipeline.media import places
from photo_pipeline.media.errors import MediaError
from photo_pipeline.media.metadata import read_metadata
from photo_pipeline.media.render import RenderSettings, render_file


def limited_environment(base: dict[str, str]) -> dict[str, str]:
    """``base`` with the settings that make the room left the same on every machine."""
    return {**base, "MALLOC_ARENA_MAX": "1", "VIPS_CONCURRENCY": "1"}


def _limit_address_space(extra_mib: str) -> None:
    """Limit to what is in use now plus ``extra_mib`` (``unlimited``: no limit)."""
    if extra_mib == "unlimited":
        return
    with open("/proc/self/statm") as statm:
        in_use = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    limit = in_use + (int(extra_mib) << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, resource.RLIM_INFINITY))


def _outcome(read: Callable[[Path], object], path: Path) -> str:
    try:
        read(path)
    except MediaError as exc:
        return exc.code
    return "ok"


def _read(path: Path) -> dict[str, str]:
    return {
        "render": _outcome(lambda p: render_file(p, RenderSettings()), path),
        "metadata": _outcome(read_metadata, path),  # with its own check decode (Pillow)
    }


def _main() -> None:
    extra_mib, *args = sys.argv[1:]
    places.warm_up()
    places.zone_at(48.85, 2.35)  # tzfpy too
    if args[0] == "read":
        _read(Path(args[1]))
        _limit_address_space(extra_mib)
        print(json.dumps(_read(Path(args[2]))))
        return
    _limit_address_space(extra_mib)
    sys.argv = ["photo-pipeline", *args]
    main()


if __name__ == "__main__":
    _main()
