"""``organize``: copy or move originals into a destination laid out by a template,
journalled so that a crash resumes it and an undo reverses it.

Front doors (CLI and API) use: ``plan_organize`` (the dry run), ``start_organize``,
``start_undo``, ``organize_report``; refusals are ``OrganizeError``, ``TemplateError``
and ``LibraryBusy``.

- :mod:`.template`: parse a layout template and render a file's path (pure);
- :mod:`.plan`: which file goes where, from catalogue rows and the destination;
- :mod:`.start`: checking a request, the dry run, queueing the jobs;
- :mod:`.journal`: the plan as rows, their states (:mod:`.states`), the report;
- :mod:`pipeline.files.transfer` (not in this package: dedupe uses it too): placing
  and removing one file, crash-safe and verified;
- :mod:`.run`, :mod:`.undo`: the two job types.

The names below load on first use, and with them both job types (registered on the
handler registry): the CLI reads ``template.DEFAULT_TEMPLATE`` for its ``--help``
without loading the database layer.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from photo_pipeline.pipeline.library.locks import (
        LIBRARY_LOCK,
        LibraryBusy,
        library_busy,
    )
    from photo_pipeline.pipeline.organize.journal import Journal, organize_report
    from photo_pipeline.pipeline.organize.plan import Candidate, PlanEntry, build_plan
    from photo_pipeline.pipeline.organize.start import (
        JOB_TYPE,
        UNDO_JOB_TYPE,
        OrganizeError,
        check_destination,
        plan_organize,
        start_organize,
        start_undo,
        undo_key,
    )
    from photo_pipeline.pipeline.organize.template import DEFAULT_TEMPLATE, TemplateError

_HOMES = {
    "LIBRARY_LOCK": "photo_pipeline.pipeline.library.locks",
    "LibraryBusy": "photo_pipeline.pipeline.library.locks",
    "library_busy": "photo_pipeline.pipeline.library.locks",
    "Journal": f"{__name__}.journal",
    "organize_report": f"{__name__}.journal",
    "Candidate": f"{__name__}.plan",
    "PlanEntry": f"{__name__}.plan",
    "build_plan": f"{__name__}.plan",
    "JOB_TYPE": f"{__name__}.start",
    "UNDO_JOB_TYPE": f"{__name__}.start",
    "OrganizeError": f"{__name__}.start",
    "check_destination": f"{__name__}.start",
    "plan_organize": f"{__name__}.start",
    "start_organize": f"{__name__}.start",
    "start_undo": f"{__name__}.start",
    "undo_key": f"{__name__}.start",
    "DEFAULT_TEMPLATE": f"{__name__}.template",
    "TemplateError": f"{__name__}.template",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    importlib.import_module(f"{__name__}.run")  # registers organize
    importlib.import_module(f"{__name__}.undo")  # and its undo
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


__all__ = [
    "DEFAULT_TEMPLATE",
    "JOB_TYPE",
    "LIBRARY_LOCK",
    "UNDO_JOB_TYPE",
    "Candidate",
    "Journal",
    "LibraryBusy",
    "OrganizeError",
    "PlanEntry",
    "TemplateError",
    "build_plan",
    "check_destination",
    "library_busy",
    "organize_report",
    "plan_organize",
    "start_organize",
    "start_undo",
    "undo_key",
]
