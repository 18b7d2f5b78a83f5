"""Camera clock correction: shift the catalogued capture times of one camera model
(never the originals) as a durable job, journalled so that its undo restores them.

Front doors (CLI and API) use: ``parse_shift``, ``plan_timeshift`` (the dry run, plain
dicts), ``start_timeshift``, ``start_undo`` and ``journal``.

- :mod:`.arithmetic`: parse/format a shift and what it does to one asset (pure);
- :mod:`.plan`: the time window and the dry run;
- :mod:`.apply`: applying a batch and its undo, journalled (and reading the journal);
- :mod:`.job`: the two job types and how they are queued.
"""

from photo_pipeline.pipeline.library.locks import LIBRARY_LOCK
from photo_pipeline.pipeline.timeshift.apply import apply_shift, apply_undo, journal
from photo_pipeline.pipeline.timeshift.arithmetic import (
    MAX_SHIFT,
    CaptureValues,
    InvalidShift,
    format_shift,
    parse_shift,
    shifted,
)
from photo_pipeline.pipeline.timeshift.job import (
    JOB_TYPE,
    UNDO_JOB_TYPE,
    NotATimeshift,
    start_timeshift,
    start_undo,
    timeshift,
    timeshift_undo,
)
from photo_pipeline.pipeline.timeshift.plan import NothingToShift, Window, plan_timeshift

__all__ = [
    "JOB_TYPE",
    "LIBRARY_LOCK",
    "MAX_SHIFT",
    "UNDO_JOB_TYPE",
    "CaptureValues",
    "InvalidShift",
    "NotATimeshift",
    "NothingToShift",
    "Window",
    "apply_shift",
    "apply_undo",
    "format_shift",
    "journal",
    "parse_shift",
    "plan_timeshift",
    "shifted",
    "start_timeshift",
    "start_undo",
    "timeshift",
    "timeshift_undo",
]
