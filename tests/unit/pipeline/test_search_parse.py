"""What the search box reads (pipeline.library.search): date words, kinds, curation
filters refused with a stable code, and text folded into the index's words."""

from __future__ import annotations

from datetime import date

import pytest

from photo_pipeline.errors import PhotoPipelineError
from photo_pipeline.pipeline.curation.filters import RatingRange
from photo_pipeline.pipeline.library.browse import AssetFilter
from photo_pipeline.pipeline.library.search import BadSearch, parse
from photo_pipeline.pipeline.search_index import words


@pytest.mark.parametrize(
    ("typed", "first", "last"),
    [
        ("2019", date(2019, 1, 1), date(2019, 12, 31)),
        ("2019-06", date(2019, 6, 1), date(2019, 6, 30)),
        ("2019-06-14", date(2019, 6, 14), date(2019, 6, 14)),
        ("june 2019", date(2019, 6, 1), date(2019, 6, 30)),
        ("Jun 2019", date(2019, 6, 1), date(2019, 6, 30)),
        ("feb 2020", date(2020, 2, 1), date(2020, 2, 29)),
        ("14 june 2019", date(2019, 6, 14), date(2019, 6, 14)),
        ("14th june 2019", date(2019, 6, 14), date(2019, 6, 14)),
        ("june 14 2019", date(2019, 6, 14), date(2019, 6, 14)),
        ("2019 june 2019", date(2019, 6, 1), date(2019, 6, 30)),  # they narrow each other
    ],
)
def test_date_words_are_capture_days(typed, first, last):
    where = parse(typed)
    assert (where.taken_from, where.taken_to, where.words) == (first, last, ())


@pytest.mark.parametrize("typed", ["2019-13", "0042", "1234", "12345"])
def test_what_is_no_date_is_text(typed):
    where = parse(typed)
    assert where.taken_from is None and where.words


def test_a_day_no_month_has_is_a_word_before_the_month():
    where = parse("31 june 2019")
    assert (where.taken_from, where.taken_to, where.words) == (
        date(2019, 6, 1), date(2019, 6, 30), ("31",),
    )  # fmt: skip


def test_words_kinds_and_the_listing_filters_combine():
    where = parse("Paris  VIDEO  île-de-France 2019", AssetFilter(camera="canon"))
    assert where.words == ("paris", "ile", "de", "france")
    assert where.type == "video" and where.camera == "canon"
    assert where.taken_from == date(2019, 1, 1)
    assert parse("photos").type == "photo" and parse("live").type == "live"


def test_text_is_folded_into_plain_words():
    assert words('IMG_0042.JPG "NEAR(paris* -berlin) Zürich ß') == [
        "img", "0042", "jpg", "near", "paris", "berlin", "zurich", "ss",
    ]  # fmt: skip
    assert parse('"*-()').words == ()


def test_curation_words_become_the_curation_filters():
    assert parse("favorite").curation.favorite is True
    assert parse("favourites paris").curation.favorite is True
    found = parse("paris rating:>=4")
    assert found.curation.rating == RatingRange(4, 5) and found.words == ("paris",)
    assert parse("stars:2-4").curation.rating == RatingRange(2, 4)
    assert parse("rating:>=2 rating:<=3").curation.rating == RatingRange(2, 3)  # both hold
    for typed, code in [("rating:9", "invalid_rating"), ("rating:>4 rating:<2", "invalid_search")]:
        with pytest.raises(PhotoPipelineError) as refused:
            parse(typed)
        assert refused.value.code == code and refused.value.status == 422


@pytest.mark.parametrize(
    "typed",
    ["photo video", "x" * 201, " ".join(f"w{n}" for n in range(17))],
)
def test_a_search_that_cannot_be_read_is_refused(typed):
    with pytest.raises(BadSearch) as refused:
        parse(typed)
    assert refused.value.code == "invalid_search"
