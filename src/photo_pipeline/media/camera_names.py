"""Camera make and model as a person reads them: ``Canon DIGITAL IXUS``, not ``Canon
Canon DIGITAL IXUS``; ``Nikon D850``, not ``NIKON CORPORATION NIKON D850``.

The catalogue keeps what the file says (``assets.make``/``model``); these functions
are for display and for organize templates:

- :func:`display_make`: the brand, one spelling per vendor (``NIKON CORPORATION`` and
  ``NIKON`` → ``Nikon``);
- :func:`display_model`: the model without the brand repeated at its start;
- :func:`display_camera`: both, as one line.

Each first cuts the text at a NUL (EXIF ASCII ends there; what follows is the rest of
a fixed-size buffer), drops control characters and collapses runs of blanks.
"""

from __future__ import annotations

import re

# Lower-cased make (after cleaning) -> the brand's usual spelling. What cameras and
# phones write, as exiftool's sample files and real libraries show them.
_MAKES = {
    "apple": "Apple",
    "asus": "ASUS",
    "canon": "Canon",
    "casio": "Casio",
    "casio computer co.,ltd.": "Casio",
    "casio computer co.,ltd": "Casio",
    "dji": "DJI",
    "eastman kodak company": "Kodak",
    "kodak": "Kodak",
    "fujifilm": "Fujifilm",
    "fuji photo film co., ltd.": "Fujifilm",
    "fuji photo film co.,ltd.": "Fujifilm",
    "gopro": "GoPro",
    "google": "Google",
    "hasselblad": "Hasselblad",
    "hewlett-packard": "HP",
    "hmd global": "Nokia",
    "htc": "HTC",
    "huawei": "Huawei",
    "konica minolta": "Konica Minolta",
    "konica minolta camera, inc.": "Konica Minolta",
    "minolta co., ltd.": "Minolta",
    "minolta": "Minolta",
    "leica": "Leica",
    "leica camera ag": "Leica",
    "leica camera": "Leica",
    "lg electronics": "LG",
    "lge": "LG",
    "microsoft": "Microsoft",
    "motorola": "Motorola",
    "nikon": "Nikon",
    "nikon corporation": "Nikon",
    "nokia": "Nokia",
    "olympus": "Olympus",
    "olympus corporation": "Olympus",
    "olympus imaging corp.": "Olympus",
    "olympus optical co.,ltd": "Olympus",
    "olympus optical co.,ltd.": "Olympus",
    "om digital solutions": "OM System",
    "oneplus": "OnePlus",
    "oppo": "OPPO",
    "panasonic": "Panasonic",
    "pentax": "Pentax",
    "pentax corporation": "Pentax",
    "asahi optical co.,ltd.": "Pentax",
    "ricoh": "Ricoh",
    "ricoh imaging company, ltd.": "Ricoh",
    "ricoh company, ltd.": "Ricoh",
    "samsung": "Samsung",
    "samsung techwin": "Samsung",
    "samsung techwin co., ltd.": "Samsung",
    "seiko epson corp.": "Epson",
    "sigma": "Sigma",
    "sony": "Sony",
    "sony ericsson": "Sony Ericsson",
    "xiaomi": "Xiaomi",
    "zeiss": "Zeiss",
}
# Brands a model may start with under another make (a Pentax made by Ricoh Imaging, a
# Nokia by HMD Global): the model's first word names the camera's brand.
_MODEL_BRANDS = {
    "canon": "Canon",
    "fujifilm": "Fujifilm",
    "kodak": "Kodak",
    "leica": "Leica",
    "nikon": "Nikon",
    "nokia": "Nokia",
    "olympus": "Olympus",
    "oneplus": "OnePlus",
    "pentax": "Pentax",
    "ricoh": "Ricoh",
    "samsung": "Samsung",
    "sony": "Sony",
    "huawei": "Huawei",
    "xiaomi": "Xiaomi",
}
# Controls other than blanks (a tab or newline counts as a space).
_CONTROL = re.compile(r"[\x00-\x08\x0e-\x1f\x7f-\x9f]")
_BLANKS = re.compile(r"\s+")


def clean(text: str | None) -> str | None:
    """``text`` cut at its first NUL, without control characters, its blanks collapsed
    and trimmed; None when nothing is left."""
    if text is None:
        return None
    text = _BLANKS.sub(" ", _CONTROL.sub("", text.split("\x00", 1)[0])).strip()
    return text or None


def _first_word(model: str) -> str:
    return model.split(" ", 1)[0].lower()


def display_make(make: str | None, model: str | None = None) -> str | None:
    """The brand as people spell it (``NIKON CORPORATION`` → ``Nikon``); a make this
    module does not know is only cleaned. With the model, a brand that the model
    starts with wins (``RICOH IMAGING COMPANY, LTD.`` + ``PENTAX K-1`` → ``Pentax``)."""
    cleaned, cleaned_model = clean(make), clean(model)
    if cleaned_model is not None and " " in cleaned_model:
        brand = _MODEL_BRANDS.get(_first_word(cleaned_model))
        if brand is not None:
            return brand
    if cleaned is None:
        return None
    return _MAKES.get(cleaned.lower(), cleaned)


def display_model(make: str | None, model: str | None) -> str | None:
    """The model without the make repeated at its start (``Canon`` + ``Canon DIGITAL
    IXUS`` → ``DIGITAL IXUS``; ``NIKON CORPORATION`` + ``NIKON D850`` → ``D850``)."""
    cleaned = clean(model)
    if cleaned is None:
        return None
    raw_make, brand = clean(make), display_make(make, model)
    for prefix in (raw_make, brand):
        if prefix is None:
            continue
        head = cleaned[: len(prefix)]
        rest = cleaned[len(prefix) :]
        if head.lower() == prefix.lower() and rest.startswith(" "):
            return rest.strip()
    words = cleaned.split(" ", 1)
    if len(words) == 2 and brand is not None and _brand_of(words[0]) == brand:
        return words[1]  # "NIKON D850" under "NIKON CORPORATION"
    if brand is not None and cleaned.lower() == brand.lower():
        return None  # the model only repeats the make
    return cleaned


def _brand_of(word: str) -> str | None:
    return _MODEL_BRANDS.get(word.lower()) or _MAKES.get(word.lower())


def display_camera(make: str | None, model: str | None) -> str | None:
    """Make and model as one line (``Canon DIGITAL IXUS``), or None with neither."""
    parts = [part for part in (display_make(make, model), display_model(make, model)) if part]
    return " ".join(parts) or None
