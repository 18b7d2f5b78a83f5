"""``dedupe``: reclaim the space of duplicates by moving every copy but one into a
quarantine under the library home, where an undo finds it and a purge deletes it.

The plan (``dedupe_plan.build_dedupe_plan``) keeps one file of each exact group (the
keeper policy, ``pipeline.library.keeper``) and, with ``near``, the assets the user kept in
near groups. Each job holds the library lock and journals its whole plan
(``dedupe_entries``) before it touches a file. The catalogue follows every step: a
quarantined file's row is ``quarantined`` (not present), present again after an undo,
gone after a purge.

Front doors (CLI and API) use: ``plan_dedupe``, ``start_dedupe``, ``start_undo``,
``start_purge``, ``dedupe_report``.

- :mod:`.start`: the dry run and queueing the jobs;
- :mod:`.journal`: the plan as rows, their states, the report;
- :mod:`.steps`: checking a keeper, putting a copy back;
- :mod:`.run`, :mod:`.undo`, :mod:`.purge`: the three job types (registered on the
  handler registry by ``pipeline.job_types``).
"""

from photo_pipeline.pipeline.dedupe.journal import Journal, dedupe_report
from photo_pipeline.pipeline.dedupe.start import (
    JOB_TYPE,
    PURGE_JOB_TYPE,
    UNDO_JOB_TYPE,
    DedupeError,
    plan_dedupe,
    quarantine_folder,
    start_dedupe,
    start_purge,
    start_undo,
    undo_key,
)

__all__ = [
    "JOB_TYPE",
    "PURGE_JOB_TYPE",
    "UNDO_JOB_TYPE",
    "DedupeError",
    "Journal",
    "dedupe_report",
    "plan_dedupe",
    "quarantine_folder",
    "start_dedupe",
    "start_purge",
    "start_undo",
    "undo_key",
]
