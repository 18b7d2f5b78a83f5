"""Measurements run in a fresh interpreter (its own imports, its own peak memory): the
child prints one JSON line last, the parent reads it back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment with this checkout first on ``PYTHONPATH`` (its
    ``src`` and its root, for ``bench.*`` and ``tests.*``), also when the benchmark
    runs from another checkout (an old commit's worktree, for a before/after)."""
    paths = [str(REPO / "src"), str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


def run_json(args: list[str], what: str, *, timeout: float | None = None) -> dict[str, Any]:
    """Run ``python *args`` and return the JSON of its last output line."""
    done = subprocess.run(
        [sys.executable, *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout,
        check=False,
    )
    if done.returncode:
        raise RuntimeError(f"{what} failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])
