"""What a person names in curation (an album, a tag): how two spellings of one name
are told alike, and which characters a name may not hold."""

from __future__ import annotations

import unicodedata

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
