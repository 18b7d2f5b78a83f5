"""Text from outside (file names, paths, error messages, camera fields) made safe to
print on one terminal line: a hostile name on a shared drive must not recolour the
terminal, clear the screen, set its title, split a line or reorder it.

Control characters (C0, DEL, C1), the bidi embedding, override and isolate
characters and lone surrogates (undecodable bytes of a name) become visible escapes,
as ``ls -b`` and ``git`` show them: ``\\x1b``, ``\\n``, ``\\u202e``, ``\\xff``. The
``--json`` output needs none of this (JSON escapes control characters itself).
"""

from __future__ import annotations

import re

from rich.markup import escape

_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
# C0 and C1 controls with DEL, the bidi embeddings/overrides (U+202A–U+202E) and
# isolates (U+2066–U+2069), and surrogates (lone ones: a str holds no pairs).
_UNSAFE = re.compile(r"[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escaped(match: re.Match[str]) -> str:
    char = match.group()
    code = ord(char)
    if char in _NAMED:
        return _NAMED[char]
    if code < 0x100:
        return f"\\x{code:02x}"
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\u{code:04x}"


def terminal_safe(value: object) -> str:
    """``value`` as text with nothing a terminal would act on (plain text); None is
    shown as nothing, as a blank table cell."""
    return "" if value is None else _UNSAFE.sub(_escaped, str(value))


def shown(value: object) -> str:
    """``value`` as terminal-safe text to put inside Rich markup: its brackets are
    shown, never read as styles (``[bold]``, ``[/]`` in a name).

    A backslash ending the text is shown as it is, so no tag may follow directly: it
    would escape that tag (the callers end their markup after a space or text)."""
    # Rich doubles a trailing backslash for a tag that may follow; the space spares it.
    return escape(terminal_safe(value) + " ")[:-1]


def counted(n: int, phrase: str) -> str:
    """``n`` and ``phrase`` agreeing in number: ``1 file``, ``2 files``, ``0 files``;
    ``phrase`` is plural, its noun the first word ending in a regular "s" (``items
    done`` → ``1 item done``, ``file rows`` → ``1 file row``)."""
    if n == 1:
        words = phrase.split(" ")
        noun = next((i for i, word in enumerate(words) if word.endswith("s")), None)
        if noun is not None:
            words[noun] = words[noun][:-1]
        phrase = " ".join(words)
    return f"{n:,} {phrase}"
