"""What a person names in curation (an album, a tag): how two spellings of one name
are told alike, and which characters a name may not hold."""

from __future__ import annotations

import unicodedata

from photo_pipeline.errors import PhotoPipelineError

# Control, format, surrogate, private-use and unassigned characters: invisible or
# meaningless in a name, and a way to make two names look alike.
_UNPRINTABLE = frozenset({"Cc", "Cf", "Cs", "Co", "Cn"})


def name_key(name: str) -> str:
    """The key two spellings of one name share: case ignored, Unicode's two spellings
    of an accent alike (NFC after casefolding)."""
    return unicodedata.normalize("NFC", name.casefold())


def has_unprintable(text: str) -> bool:
    """Whether ``text`` holds a character a name may not (:data:`_UNPRINTABLE`)."""
    return any(unicodedata.category(ch) in _UNPRINTABLE for ch in text)


def normalise_name(
    text: str, invalid: type[PhotoPipelineError], whose: str, empty: str, max_length: int
) -> tuple[str, str]:
    """A name as stored (space runs made one, NFC) and its casefolded key; ``invalid``
    (with ``empty`` when nothing is left, ``whose``: "an album's") for a name that is
    empty, holds an unprintable character or is longer than ``max_length``."""
    name = " ".join(unicodedata.normalize("NFC", text).split())
    if not name:
        raise invalid(detail=empty)
    if has_unprintable(name):
        raise invalid(detail=f"{text!r}: a name has no control or unassigned characters")
    key = name_key(name)
    if len(name) > max_length or len(key) > max_length:
        raise invalid(detail=f"{whose} name is at most {max_length} characters")
    return name, key
