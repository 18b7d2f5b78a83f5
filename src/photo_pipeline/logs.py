"""Structured log lines: the message, then key=value fields (worker, job, item)."""

from __future__ import annotations

import logging
import sys

FIELDS = ("worker_id", "job_id", "job_type", "item")


class KeyValueFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = super().format(record)
        fields = " ".join(
            f"{name}={getattr(record, name)}" for name in FIELDS if hasattr(record, name)
        )
        return f"{line} {fields}" if fields else line


def configure(level: str = "INFO") -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(KeyValueFormatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    root = logging.getLogger("photo_pipeline")
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    root.propagate = False
