"""The keeper policy as a table: which copy of a duplicate stays, and the rule why."""

from __future__ import annotations

import pytest

from photo_pipeline.pipeline.library import keeper
from photo_pipeline.pipeline.library.keeper import Copy


def copy(path: str, mtime: int = 100, **facts) -> Copy:
    return Copy(key=f"/lib/{path}", path=path, mtime_ns=mtime, **facts)


CASES = [
    # (copies, expected keeper path, expected reason)
    pytest.param(
        [copy("card3/DSC_00003.JPG"), copy("backup/copy_DSC_00003.JPG")],
        "card3/DSC_00003.JPG",
        keeper.ORIGINAL_NAME,
        id="copy_-prefix-loses-though-listed-second",
    ),
    pytest.param(
        [copy("backup/copy_DSC_00003.JPG", mtime=1), copy("card3/DSC_00003.JPG", mtime=9)],
        "card3/DSC_00003.JPG",
        keeper.ORIGINAL_NAME,
        id="name-before-age",
    ),
    pytest.param(
        [copy("a/IMG_1-copy.jpg"), copy("a/IMG_1.jpg")],
        "a/IMG_1.jpg",
        keeper.ORIGINAL_NAME,
        id="dash-copy-suffix",
    ),
    pytest.param(
        [copy("a/IMG_1 (1).jpg"), copy("b/IMG_1.jpg")],
        "b/IMG_1.jpg",
        keeper.ORIGINAL_NAME,
        id="parenthesised-number",
    ),
    pytest.param(
        [copy("a/IMG_1 - Copy.jpg"), copy("a/IMG_1.jpg")],
        "a/IMG_1.jpg",
        keeper.ORIGINAL_NAME,
        id="windows-dash-Copy",
    ),
    pytest.param(
        [copy("a/IMG_1_edited.jpg"), copy("zz/deep/folder/IMG_1.jpg")],
        "zz/deep/folder/IMG_1.jpg",
        keeper.ORIGINAL_NAME,
        id="edited-suffix-before-path-length",
    ),
    pytest.param(
        [copy("a/Copy of IMG_1.jpg"), copy("a/IMG_1 copy 2.jpg"), copy("a/IMG_1.jpg")],
        "a/IMG_1.jpg",
        keeper.ORIGINAL_NAME,
        id="macos-and-google-names",
    ),
    pytest.param(
        [copy("a/IMG_1.jpg", decided=False), copy("b/IMG_1 (1).jpg", decided=True)],
        "b/IMG_1 (1).jpg",
        keeper.DECISION,
        id="the-users-decision-first",
    ),
    pytest.param(
        [copy("a/IMG_1.jpg"), copy("2023/IMG_1-copy.jpg", organized=True)],
        "2023/IMG_1-copy.jpg",
        keeper.ORGANIZED,
        id="organized-destination-before-names",
    ),
    pytest.param(
        [copy("backup/IMG_1.JPG"), copy("card/IMG_1.JPG", bundle=2, mtime=500)],
        "card/IMG_1.JPG",
        keeper.KEEPS_PAIR,
        id="raw-jpeg-pair-and-sidecar-kept-whole",
    ),
    pytest.param(
        [copy("a/IMG_1.jpg", mtime=300), copy("b/IMG_1.jpg", mtime=200)],
        "b/IMG_1.jpg",
        keeper.OLDEST,
        id="oldest-mtime",
    ),
    pytest.param(
        [copy("long/folder/IMG_1.jpg"), copy("s/IMG_1.jpg")],
        "s/IMG_1.jpg",
        keeper.SHORTEST_PATH,
        id="shortest-path",
    ),
    pytest.param(
        [copy("b/IMG_1.jpg"), copy("a/IMG_1.jpg")],
        "a/IMG_1.jpg",
        keeper.FIRST,
        id="alike-in-everything-first-in-path-order",
    ),
    pytest.param([copy("only/IMG_1.jpg")], "only/IMG_1.jpg", keeper.ONLY, id="one-copy"),
]


@pytest.mark.parametrize(("copies", "kept", "reason"), CASES)
def test_the_keeper_and_why(copies, kept, reason):
    chosen, why = keeper.choose(copies)
    assert (chosen.path, why) == (kept, reason)
    # The order the copies come in never changes the choice.
    assert keeper.choose(list(reversed(copies)))[0].path == kept
    assert keeper.explain(why) != why


@pytest.mark.parametrize(
    ("name", "is_copy"),
    [
        ("copy_DSC_00003.JPG", True),
        ("Copy of IMG_1.jpg", True),
        ("IMG_1 copy.jpg", True),
        ("IMG_1-copy.jpg", True),
        ("IMG_1_copy2.jpg", True),
        ("IMG_1 - Copy.jpg", True),
        ("IMG_1 - Copy (2).jpg", True),
        ("IMG_1 (1).jpg", True),
        ("IMG_1_edited.jpg", True),
        ("IMG_1.JPG.xmp", False),
        ("DSC_00003.JPG", False),
        ("copyright_notice.jpg", False),
        ("IMG_20230714_101530.jpg", False),
        ("edit.jpg", False),
    ],
)
def test_copy_looking_names(name, is_copy):
    assert keeper.looks_like_copy(name) is is_copy


def test_no_copies_is_a_programming_error():
    with pytest.raises(ValueError):
        keeper.choose([])
