"""Which copy of a duplicate to keep, and why: a pure function of facts about each copy.

The rules, in order (the first one that tells the copies apart decides):

1. ``decision``: the user chose keepers for this group;
2. ``organized``: a copy already inside an organized destination;
3. ``original_name``: an original-looking name over ``copy``, ``(1)``, `` - Copy``,
   ``_edited``, ``copy_``/``Copy of`` (the copy's name is what a file manager made);
4. ``keeps_pair``: the copy whose folder holds more of its bundle (a RAW beside its
   JPEG, ``.xmp``/``.aae`` sidecars): keeping it keeps the pair and sidecars whole;
5. ``oldest``: the oldest modification time (of its bundle);
6. ``shortest_path``: the shortest path, then the first in path order (``first``).

``dedupe`` and the duplicates listings both use :func:`choose`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from _typeshed import SupportsRichComparison

DECISION = "decision"
ORGANIZED = "organized"
ORIGINAL_NAME = "original_name"
KEEPS_PAIR = "keeps_pair"
# A Live Photo's motion part: the copy beside its still's keeper (pipeline.dedupe.plan).
BESIDE_ITS_STILL = "beside_its_still"
OLDEST = "oldest"
SHORTEST_PATH = "shortest_path"
FIRST = "first"
ONLY = "only_copy"

REASONS = {
    DECISION: "you chose it",
    ORGANIZED: "it is inside an organized destination",
    ORIGINAL_NAME: "its name looks original, the others' look like copies",
    KEEPS_PAIR: "it keeps its RAW+JPEG pair or sidecars together",
    BESIDE_ITS_STILL: (
        "it is the Live Photo's video beside the copy of its photo that stays: "
        "the two stay together"
    ),
    OLDEST: "it is the oldest",
    SHORTEST_PATH: "it has the shortest path",
    FIRST: "it comes first (the copies are alike in every other way)",
    ONLY: "it is the only copy left",
}

# Names a file manager, a phone or an editor gives a second copy (case-insensitive,
# matched on the name without its extension).
_COPY_NAME = re.compile(
    r"""
    ^copy[ _-]                       # copy_IMG_1, copy-IMG_1
    | ^copy\ of\                     # Copy of IMG_1
    | [ _-]copy(?:[ _-]?\d+)?$       # IMG_1 copy, IMG_1-copy, IMG_1_copy 2
    | \ -\ copy(?:\ \(\d+\))?$       # IMG_1 - Copy, IMG_1 - Copy (2)
    | \ ?\(\d+\)$                    # IMG_1 (1), IMG_1(2)
    | [ _-]edit(?:ed)?(?:[ _-]?\d+)?$  # IMG_1_edited, IMG_1-edit
    """,
    re.IGNORECASE | re.VERBOSE,
)


def looks_like_copy(name: str) -> bool:
    """Whether a file name (with or without extension) is what copying makes."""
    stem = name
    while True:
        stem, ext = os.path.splitext(stem)
        if not ext or len(ext) > 6 or not ext[1:].isalnum():
            stem += ext
            break
    return bool(_COPY_NAME.search(stem.strip()))


@dataclass(frozen=True)
class Copy:
    """What the policy knows of one copy of a content."""

    key: str  # the copy's full path, as a decision names it
    path: str  # its path relative to its source (for length and order)
    mtime_ns: int  # of its bundle: the oldest of the copy and its companions
    organized: bool = False  # inside an organized destination
    bundle: int = 0  # companions and sidecars beside it with its stem
    decided: bool = False  # named by the user's decision on the group

    @property
    def name(self) -> str:
        return os.path.basename(self.path)


Rule = tuple[str, Callable[[Copy], "SupportsRichComparison"]]  # smaller is better

RULES: tuple[Rule, ...] = (
    (DECISION, lambda c: not c.decided),
    (ORGANIZED, lambda c: not c.organized),
    (ORIGINAL_NAME, lambda c: looks_like_copy(c.name)),
    (KEEPS_PAIR, lambda c: -c.bundle),
    (OLDEST, lambda c: c.mtime_ns),
    (SHORTEST_PATH, lambda c: len(c.path)),
    (FIRST, lambda c: (c.path, c.key)),
)


def choose(copies: Sequence[Copy]) -> tuple[Copy, str]:
    """The copy to keep and the rule that made it win (``only_copy`` for one copy)."""
    if not copies:
        raise ValueError("no copies to choose from")
    if len(copies) == 1:
        return copies[0], ONLY
    left = list(copies)
    reason = FIRST
    for name, key in RULES:
        best = min(key(c) for c in left)
        narrowed = [c for c in left if key(c) == best]
        if len(narrowed) < len(left) and reason == FIRST:
            reason = name
        left = narrowed
        if len(left) == 1:
            break
    return left[0], reason


def explain(reason: str) -> str:
    """A sentence for people: why the keeper won."""
    return REASONS.get(reason, reason)
