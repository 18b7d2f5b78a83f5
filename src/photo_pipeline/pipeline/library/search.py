"""What a person types into the search box, read into the library's listing filters
(``browse.AssetFilter``), so that results page in the library's own orders.

- date words: ``2019``, ``2019-06``, ``2019-06-14``, ``june 2019``, ``jun 2019``,
  ``14 june 2019``, ``june 14 2019`` (capture days, local calendar). Several narrow
  each other;
- kinds: ``photo``/``photos``, ``video``/``videos``, ``live``;
- curation: ``favorite`` (``fav``, ``heart``) and ``rating:>=4`` (``rating:5``,
  ``stars:2-4``, as ``assets --rating`` reads a range: ``curation.filters``);
- every other word is text: each of its words (``pipeline.search_index.words``) must
  be a prefix of a word of the asset's file names, camera, lens, place, tags or
  albums.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import replace
from datetime import date

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.pipeline.curation.filters import RatingRange, parse_rating_range
from photo_pipeline.pipeline.library.browse import AssetFilter
from photo_pipeline.pipeline.search_index import MAX_WORDS, words

MAX_LENGTH = 200

_MONTHS = {
    name.lower(): number
    for names in (calendar.month_name, calendar.month_abbr)
    for number, name in enumerate(names)
    if name
}
_MONTHS["sept"] = 9
_KINDS = {"photo": "photo", "photos": "photo", "video": "video", "videos": "video", "live": "live"}
_FAVORITE = re.compile(r"^(favou?rites?|fav|hearts?)$")
_RATING = re.compile(r"^(?:rating|rated|stars?):?([<>=]*\d.*)$")
_ISO = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$")
_DAY = re.compile(r"^\d{1,2}(?:st|nd|rd|th)?$")
# A bare number is a year only in this span (IMG_0042's 0042 and 12345 are text).
_YEARS = range(1826, 2200)


class BadSearch(PhotoPipelineError):
    code = "invalid_search"
    status = 422


def parse(text: str, base: AssetFilter | None = None) -> AssetFilter:
    """The filter ``text`` asks for, on top of ``base`` (the listing's other filters)."""
    if len(text) > MAX_LENGTH:
        raise BadSearch(detail=f"a search is at most {MAX_LENGTH} characters")
    found = base or AssetFilter()
    raw = [w for w in re.split(r"\s+", text.strip().lower()) if w]
    text_words: list[str] = []
    span: tuple[date, date] | None = None
    kind: str | None = None
    curation = found.curation
    i = 0
    while i < len(raw):
        word = raw[i]
        days, used = _date_at(raw, i)
        if days is not None:
            span = days if span is None else (max(span[0], days[0]), min(span[1], days[1]))
            i += used
            continue
        if word in _KINDS:
            if kind is not None and kind != _KINDS[word]:
                raise BadSearch(detail=f"a search names one kind at most, not {kind} and {word}")
            kind = _KINDS[word]
        elif _FAVORITE.match(word):
            curation = replace(curation, favorite=True)
        elif rated := _RATING.match(word):
            asked = parse_rating_range(rated[1])  # InvalidRating: its own code
            if curation.rating is not None:
                both = RatingRange(
                    max(asked.low, curation.rating.low), min(asked.high, curation.rating.high)
                )
                if both.low > both.high:
                    raise BadSearch(detail=f"{word!r} and the listing's rating match nothing")
                asked = both
            curation = replace(curation, rating=asked)
        else:
            text_words += words(word)
        i += 1
    if len(text_words) > MAX_WORDS:
        raise BadSearch(detail=f"a search reads at most {MAX_WORDS} words")
    if kind is not None:
        if found.type not in (None, kind):
            raise BadSearch(detail=f"the search asks for {kind}, the listing for {found.type}")
        found = replace(found, type=kind)
    if span is not None:
        low = max(span[0], found.taken_from or date.min)
        high = min(span[1], found.taken_to or date.max)
        found = replace(found, taken_from=low, taken_to=high)
    return replace(found, curation=curation, words=(*found.words, *dict.fromkeys(text_words)))


def _date_at(raw: list[str], i: int) -> tuple[tuple[date, date] | None, int]:
    """The capture days the date words starting at ``raw[i]`` name, and how many words
    they are (None, 0: no date starts here)."""
    nxt = raw[i + 1 : i + 3]
    if m := _ISO.match(raw[i]):
        return _span(int(m[1]), m[2], m[3]), 1
    # 14 june 2019
    if _DAY.match(raw[i]) and len(nxt) == 2 and nxt[0] in _MONTHS and _is_year(nxt[1]):
        return _span(int(nxt[1]), _MONTHS[nxt[0]], _digits(raw[i])), 3
    if raw[i] in _MONTHS and nxt:
        # june 14 2019, june 2019
        if len(nxt) == 2 and _DAY.match(nxt[0]) and _is_year(nxt[1]):
            return _span(int(nxt[1]), _MONTHS[raw[i]], _digits(nxt[0])), 3
        if _is_year(nxt[0]):
            return _span(int(nxt[0]), _MONTHS[raw[i]], None), 2
    return None, 0


def _is_year(word: str) -> bool:
    return word.isascii() and word.isdigit() and len(word) == 4 and int(word) in _YEARS


def _digits(word: str) -> int:
    return int(re.match(r"\d+", word)[0])  # type: ignore[index]


def _span(year: int, month: int | str | None, day: int | str | None) -> tuple[date, date] | None:
    """The first and last day of the year, month or day; None if there is no such
    date (2019-13, 31 june 2019: the word is then text)."""
    if year not in _YEARS:
        return None
    try:
        if month is None:
            return date(year, 1, 1), date(year, 12, 31)
        m = int(month)
        if day is None:
            return date(year, m, 1), date(year, m, calendar.monthrange(year, m)[1])
        d = date(year, m, int(day))
        return d, d
    except ValueError:
        return None
