"""The names Google Takeout gives the JSON beside each exported photo or video.

``IMG_1.JPG.json``, or ``IMG_1.JPG.supplemental-metadata.json`` in newer exports, the
part before ``.json`` cut at 46 characters; a second ``IMG_1(1).JPG`` has
``IMG_1.JPG(1).json``; an edit ``IMG_1-edited.JPG`` (``-bearbeitet``, ``-modifié``… in
other languages) shares its original's. The scan looks for a file's JSON by these
names (:func:`takeout_names`); organize carries a JSON along with the photo it
describes (:func:`takeout_owners`), renamed in the same form after the photo's new name
(:func:`takeout_renamed`), so that it is found beside it again. Pure string work: no
decoder is loaded (organize's workers stay light).
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Container, Iterable

_NAME_LIMIT = 46  # characters before ".json" (the whole name is at most 51)
_SUPPLEMENTAL = ".supplemental-metadata"
_COPY = re.compile(r"^(?P<base>.*)\((?P<number>\d+)\)(?P<extension>\.[^.()]*)$")
# What Google Photos appends to an edit's (or a creation's) name, in the export's
# language; such a file shares its original's JSON. Both Unicode forms: an unzip on
# macOS writes decomposed names.
_EDIT_SUFFIXES = (
    "edited", "effects", "smile", "mix",  # English
    "bearbeitet",  # German
    "bewerkt",  # Dutch
    "edytowane",  # Polish
    "modifié",  # French
    "modificato",  # Italian
    "ha editado", "editado",  # Spanish
    "editat",  # Catalan
    "編集済み",  # Japanese
)  # fmt: skip
_EDIT_FORMS = (
    re.escape(form)
    for suffix in _EDIT_SUFFIXES
    for form in dict.fromkeys(unicodedata.normalize(f, suffix) for f in ("NFC", "NFD"))
)
_EDITED = re.compile(
    rf"-(?:{'|'.join(_EDIT_FORMS)})(?=\.[^.]*$)",
    re.IGNORECASE,
)


def takeout_names(name: str) -> tuple[str, ...]:
    """The names Takeout may have given the JSON of the file ``name``, likeliest first
    (``IMG_1(1).JPG`` is read as the second ``IMG_1.JPG``, then as a name of its own)."""
    return tuple(dict.fromkeys(json_name for _, json_name in _forms(name)))


def takeout_owners(names: Iterable[str], present: Container[str]) -> dict[str, str]:
    """Which of the JSONs ``present`` in a folder describes which of its files
    ``names``: the first of a file's :func:`takeout_names` that is there, as the scan
    reads it. One JSON goes to one file, an original before its edits (``IMG_1.JPG``
    before ``IMG_1-edited.JPG``, which read the same JSON)."""
    owners: dict[str, str] = {}
    for name in sorted(names, key=lambda n: (_EDITED.search(n) is not None, n)):
        found = next((j for j in takeout_names(name) if j in present), None)
        if found is not None:
            owners.setdefault(found, name)
    return owners


def takeout_renamed(json_name: str, name: str, new_name: str) -> str:
    """The name of ``json_name``, the JSON of the file ``name``, beside that file
    renamed ``new_name``: in the same form (``.supplemental-metadata.json``, the whole
    name, or the stem), so that :func:`takeout_names` finds it there first."""
    form = next((f for f, j in _forms(name) if j == json_name), "name")
    renamed: dict[str, str] = {}
    for new_form, new_json in _names(new_name, ""):
        renamed.setdefault(new_form, new_json)  # the one looked for first
    return renamed.get(form) or renamed["name"]


def _forms(name: str) -> list[tuple[str, str]]:
    """(form, JSON name) pairs for the file ``name``, likeliest first."""
    numbered = _COPY.match(name)
    copies = (
        []
        if numbered is None
        else _names(numbered["base"] + numbered["extension"], f"({numbered['number']})")
    )
    return [*copies, *_names(name, "")]


def _names(name: str, copy: str) -> list[tuple[str, str]]:
    """(form, JSON name) pairs for the file ``name``: by its original's name first when
    it reads as an edit's (a ``party-mix.jpg`` may also be just that)."""
    pairs = []
    for base_name in dict.fromkeys((_EDITED.sub("", name), name)):
        stem = os.path.splitext(base_name)[0]
        bases = (("supplemental", base_name + _SUPPLEMENTAL), ("name", base_name), ("stem", stem))
        pairs += [(form, f"{base[:_NAME_LIMIT]}{copy}.json") for form, base in bases if base]
    return pairs
