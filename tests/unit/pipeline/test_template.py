"""Destination templates: parsing, rendering, and never leaving the destination."""

from __future__ import annotations

import os
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from photo_pipeline.pipeline.organize.template import (
    DEFAULT_TEMPLATE,
    TemplateError,
    extension,
    inside,
    parse,
    sibling,
)

TEMPLATES = [
    DEFAULT_TEMPLATE,
    "{make}/{model}/{original_name}.{ext}",
    "{country}/{city}/{taken:%Y}/{hash8}_{counter:03}.{ext}",
    "..{make}/.{model}./{original_name}{ext}",
    "{original_name}",
    "{taken:%Y%m%d_%H%M%S}_{make}_{model}.{ext}",
]
RESERVED = {
    "CON",
    "PRN",
    "AUX",
    "NUL",
    *(f"COM{n}" for n in range(10)),
    *(f"LPT{n}" for n in range(10)),
}

# Any text at all, weighted towards what attacks paths.
nasty = st.one_of(
    st.none(),
    st.text(),
    st.sampled_from(["..", ".", "/", "\\", "../../etc/passwd", "CON", "nul.txt", " ", "a\x00b"]),
    st.lists(st.sampled_from(["..", "/", "\\", ".", "x", "\x00", ":", " ", "é"]), max_size=12).map(
        "".join
    ),
)
taken = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.datetimes().map(lambda d: d.isoformat()),
)


def assert_safe_name(name: str) -> None:
    assert name not in ("", ".", "..")
    assert len(name.encode("utf-8")) <= 255
    assert not any(c in '<>:"/\\|?*' for c in name)
    assert not any(unicodedata.category(c) in ("Cc", "Cs") for c in name)
    assert not name.startswith(".") and not name.endswith((".", " "))
    assert name.split(".", 1)[0].strip().upper() not in RESERVED


@settings(max_examples=300, deadline=None)
@given(
    template=st.sampled_from(TEMPLATES),
    values=st.fixed_dictionaries(
        {
            "taken": taken,
            "make": nasty,
            "model": nasty,
            "ext": nasty,
            "hash8": nasty,
            "original_name": nasty,
            "country": nasty,
            "city": nasty,
        }
    ),
    counter=st.integers(1, 10_000),
    suffix=nasty.map(lambda s: "." + (s or "")),
)
def test_no_field_value_escapes_the_destination(template, values, counter, suffix):
    destination = "/library/organized"
    relative = parse(template).render(values, counter)
    target = inside(destination, relative)  # raises if it would leave
    assert os.path.commonpath([destination, target]) == destination and target != destination
    for name in relative.split("/"):
        assert_safe_name(name)
    neighbour = sibling(relative, suffix)
    assert os.path.dirname(neighbour) == os.path.dirname(relative)
    assert_safe_name(os.path.basename(neighbour))
    inside(destination, neighbour)


def test_rendering_the_default_template():
    values = {"taken": "2023-07-14T10:15:30", "original_name": "IMG_0001", "ext": "jpg"}
    template = parse(DEFAULT_TEMPLATE)
    assert template.render(values) == "2023/2023-07-14/20230714_101530_IMG_0001.jpg"
    assert template.render(values, 3) == "2023/2023-07-14/20230714_101530_IMG_0001-3.jpg"
    # No date at all, or only the file's mtime: undated/, in the file's own folder.
    assert template.render({}) == "undated/unknown.unknown"
    undated = {**values, "taken_source": "mtime", "folder": "roll/2019"}
    assert template.render(undated) == "undated/roll/2019/IMG_0001.jpg"
    assert template.render(undated, 2) == "undated/roll/2019/IMG_0001-2.jpg"
    dated = {**undated, "taken_source": "filename"}
    assert template.render(dated) == "2023/2023-07-14/20230714_101530_IMG_0001.jpg"


def test_a_fallback_is_used_for_undated_files_and_unknown_values():
    template = parse("{taken:%Y|undated}/{make|no camera}/{taken:%m%d_|}{original_name}.{ext}")
    assert template.files_undated
    values = {"taken": "2023-07-14T10:15:30", "original_name": "A", "ext": "jpg", "make": "Nikon"}
    assert template.render(values) == "2023/Nikon/0714_A.jpg"
    values |= {"taken_source": "mtime", "make": None}
    assert template.render(values) == "undated/no camera/A.jpg"
    # Without a fallback, an undated file's mtime names it as before.
    assert parse("{taken:%Y}/{original_name}.{ext}").render(values) == "2023/A.jpg"
    assert not parse("{taken:%Y}/{original_name}.{ext}").files_undated
    # A folder of the source keeps its folders; each name is made safe.
    folder = parse("{taken:%Y|{folder}}/{original_name}.{ext}")
    assert folder.render(values | {"folder": "a/..b/CON"}) == "a/b/_CON/A.jpg"


@pytest.mark.parametrize(
    "text",
    [
        "{taken:%Y|{make|x}}/{ext}",  # a fallback's own fallback
        "{taken:%Y|a/b}/{ext}",  # a folder in a fallback
        "{counter|x}.{ext}",
        "{taken:%Y|{nope}}/{ext}",
        "{taken:%Y|{{make}}}/{ext}",
        "{taken:%Y|x:y}/{ext}",
    ],
)
def test_bad_fallbacks_are_refused(text):
    with pytest.raises(TemplateError) as refused:
        parse(text)
    assert refused.value.code == "invalid_template"


def test_fields_fall_back_and_are_sanitised():
    template = parse("{country}/{city}/{make}_{model}_{counter:03}.{ext}")
    assert template.render({"make": "Canon", "model": "EOS R5", "ext": "cr2"}, 2) == (
        "unknown/unknown/Canon_EOS R5_002.cr2"
    )
    assert template.render(
        {"country": "../..", "city": "CON", "make": "a/b", "model": "c\\d", "ext": "x"}
    ) == ("_/_CON/a_b_c_d_001.x")
    # Joiners spell an emoji family and Persian words; a bidi override is no name.
    family, persian = (
        "\U0001f468\u200d\U0001f469\u200d\U0001f467",
        "\u0645\u06cc\u200c\u0631\u0648\u0645",
    )
    assert (
        parse("{make}/{model}.{ext}").render(
            {"make": family, "model": persian + "\u202egpj.exe", "ext": "jpg"}
        )
        == f"{family}/{persian}_gpj.exe.jpg"
    )
    assert sibling("2023/IMG_1.jpg", ".JPG.xmp") == "2023/IMG_1.JPG.xmp"
    assert extension("IMG_1.JPEG", "jpeg") == "jpeg"
    assert extension("IMG_1", "heif") == "heic"


@pytest.mark.parametrize(
    ("text", "code"),
    [
        ("", "invalid_template"),
        ("../{original_name}.{ext}", "template_escapes"),
        ("{make}/../{original_name}", "template_escapes"),
        ("/abs/{original_name}", "template_escapes"),
        ("C:/{original_name}", "template_escapes"),
        ("{taken}/{original_name}", "invalid_template"),
        ("{taken:%Q}/{original_name}", "invalid_template"),
        ("{taken:%Y%}/{original_name}", "invalid_template"),
        ("{nope}", "invalid_template"),
        ("{make:x}/{original_name}", "invalid_template"),
        ("{counter:abc}/{original_name}", "invalid_template"),
        ("a//{original_name}", "invalid_template"),
        ("{original_name}/", "invalid_template"),
        ("same-name.jpg", "invalid_template"),
        ("{make", "invalid_template"),
        ("a\\b/{original_name}", "invalid_template"),
        ("a\x00/{original_name}", "invalid_template"),
    ],
)
def test_bad_templates_are_refused_with_a_code(text, code):
    with pytest.raises(TemplateError) as refused:
        parse(text)
    assert refused.value.code == code
    assert refused.value.detail


def test_inside_refuses_paths_that_leave():
    for relative in ("../x", "a/../../x", "/etc/passwd", "", ".", "a//b"):
        with pytest.raises(TemplateError):
            inside("/library/organized", relative)
