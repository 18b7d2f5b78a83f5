"""How the benchmarks print: section headings, wrapped notes, aligned tables, and the
ratios and medians their findings are stated in."""

from __future__ import annotations

import statistics
import sys
import textwrap
from collections.abc import Iterable
from typing import Any


def heading(title: str) -> None:
    print(f"\n{title}\n{'─' * len(title)}", flush=True)


def note(message: str, indent: int = 2) -> None:
    prefix = " " * indent
    text_ = textwrap.fill(message, 100, initial_indent=prefix, subsequent_indent=prefix + "  ")
    print(text_, flush=True)


def table(headers: list[str], rows: list[list[Any]]) -> None:
    cells = [headers, *[[_cell(v) for v in row] for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    right = [i > 0 and all(_numeric(row[i]) for row in rows) for i in range(len(headers))]
    for n, row in enumerate(cells):
        pairs = zip(row, widths, right, strict=True)
        line = "  ".join(c.rjust(w) if r else c.ljust(w) for c, w, r in pairs)
        print(f"  {line}".rstrip())
        if n == 0:
            print("  " + "  ".join("-" * w for w in widths))
    sys.stdout.flush()


def _numeric(value: Any) -> bool:
    """Numbers, ratios ("1.2x") and blanks are right-aligned."""
    return isinstance(value, int | float) or value == "" or value[:1].isdigit()


def _cell(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.0f}" if value >= 100 else f"{value:.2f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def median_ratio(pairs: Iterable[tuple[float, float]]) -> float:
    """The median of a/b over rounds: each round's two numbers were measured close
    together, so machine noise partly cancels."""
    return statistics.median(a / b for a, b in pairs)
