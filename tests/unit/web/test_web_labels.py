"""The web UI names every capture-time source the catalogue can hold."""

from __future__ import annotations

import re
from pathlib import Path

from photo_pipeline.media.capture_time import SOURCES

FORMAT_JS = Path(__file__).parents[3] / "src/photo_pipeline/web/static/js/format.js"


def test_every_capture_time_source_has_a_label_in_the_ui():
    block = re.search(r"const SOURCES = \{(.*?)\};", FORMAT_JS.read_text(), re.S)
    assert block is not None
    labelled = re.findall(r"^\s*(\w+):", block.group(1), re.M)
    assert labelled == list(SOURCES)  # all of them, in their order of precedence
