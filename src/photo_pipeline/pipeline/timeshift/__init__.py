"""Camera clock correction and set dates: shift the catalogued capture times of one
camera model, or of chosen assets, by an amount (``by``), or set them to one local date
and time (``set_to``: the date becomes the user's, source "user", trusted like a
camera's), never touching the originals, as a durable job journalled so that its undo
restores them.

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
    parse_set,
    parse_shift,
    set_clock,
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
from photo_pipeline.pipeline.timeshift.plan import (
    MAX_ASSET_IDS,
    USER_SOURCE,
    NothingToShift,
    UnknownAssets,
    Window,
    plan_timeshift,
)

__all__ = [
    "JOB_TYPE",
    "LIBRARY_LOCK",
    "MAX_ASSET_IDS",
    "MAX_SHIFT",
    "UNDO_JOB_TYPE",
    "USER_SOURCE",
    "CaptureValues",
    "InvalidShift",
    "NotATimeshift",
    "NothingToShift",
    "UnknownAssets",
    "Window",
    "apply_shift",
    "apply_undo",
    "format_shift",
    "journal",
    "parse_set",
    "parse_shift",
    "plan_timeshift",
    "set_clock",
    "shifted",
    "start_timeshift",
    "start_undo",
    "timeshift",
    "timeshift_undo",
]
