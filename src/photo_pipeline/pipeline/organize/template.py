"""Destination templates for ``organize``: ``{taken:%Y}/{taken:%Y-%m-%d}/{original_name}.{ext}``.

Fields: ``{taken:FORMAT}`` (the local capture time, strftime directives), ``{make}``,
``{model}``, ``{ext}`` (lower-cased), ``{hash8}``, ``{original_name}`` (without its
extension), ``{counter}`` / ``{counter:03}``, ``{country}``, ``{city}``, and ``{folder}``:
the file's folder relative to its source (its folders kept as folders; nothing for a
file at the top of its source).

A field may name a fallback after ``|``, used when the file is *undated* (its only
date is its file's mtime, ``media.capture_time.UNDATED_SOURCES``) for ``{taken}``, or
when the value is unknown for the others: ``{taken:%Y|undated}``, ``{make|no-camera}``.
The fallback is text and may hold fields itself (no fallbacks of its own):
``{taken:%Y-%m-%d|{folder}}``; an empty fallback (``{taken:%Y%m%d_|}``) leaves nothing.
The default template sends undated files to ``undated/<their folder in the source>/``.

A template is parsed once (bad ones are refused with ``invalid_template``); rendering
it with any field values gives a relative path whose every component is a name that
is valid on every common filesystem (no separators, no ``..``, no control or
Windows-reserved characters or names, at most 255 bytes), so the result always stays
inside the destination.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from photo_pipeline.errors import PhotoPipelineError

# Undated files (only an mtime) go to undated/<their folder in the source>/<name>.
DEFAULT_TEMPLATE = (
    "{taken:%Y|undated}/{taken:%Y-%m-%d|{folder}}/{taken:%Y%m%d_%H%M%S_|}{original_name}.{ext}"
)
UNKNOWN = "unknown"
FIELDS = frozenset(
    {
        "taken",
        "make",
        "model",
        "ext",
        "hash8",
        "original_name",
        "counter",
        "country",
        "city",
        "folder",
    }
)
# The value that says where ``taken`` came from (``assets.taken_source``).
TAKEN_SOURCE = "taken_source"
# Inside a rendered component: where ``{folder}`` puts a folder boundary.
_FOLDER_BREAK = "\x00"
# strftime directives that name parts of a local capture time (no %Z/%z: the catalogue
# keeps local time plus an offset, and a zone name would differ between machines).
_TAKEN_DIRECTIVES = frozenset("YmdHMSyjbBaAIpUWf%")
_MAX_NAME_BYTES = 255
_MAX_FIELD_CHARS = 80
# Characters Windows refuses in names; "/" and "\\" are separators somewhere.
_FORBIDDEN = frozenset('<>:"/\\|?*')
_RESERVED = frozenset(
    {"CON", "PRN", "AUX", "NUL"}
    | {f"COM{n}" for n in range(10)}
    | {f"LPT{n}" for n in range(10)}
    | {"COM¹", "COM²", "COM³", "LPT¹", "LPT²", "LPT³"}
)
_EXTENSIONS = {
    "jpeg": "jpg",
    "png": "png",
    "tiff": "tif",
    "webp": "webp",
    "heif": "heic",
    "dng": "dng",
    "cr2": "cr2",
    "nef": "nef",
    "arw": "arw",
}


class TemplateError(PhotoPipelineError):
    """A template that cannot be used (``invalid_template``) or a path that would
    leave the destination (``template_escapes``)."""

    code = "invalid_template"
    status = 422


@dataclass(frozen=True)
class _Field:
    name: str
    spec: str
    # What an undated {taken} or an unknown value renders as instead (``|`` in the
    # template); None: no fallback.
    fallback: tuple[str | _Field, ...] | None = None


Part = str | _Field


@dataclass(frozen=True)
class Template:
    """A parsed template: per path component, its literal text and fields."""

    text: str
    components: tuple[tuple[Part, ...], ...]

    def _fields(self) -> list[_Field]:
        found: list[_Field] = []
        for component in self.components:
            for part in component:
                if isinstance(part, _Field):
                    found.append(part)
                    found.extend(p for p in part.fallback or () if isinstance(p, _Field))
        return found

    @property
    def has_counter(self) -> bool:
        return any(p.name == "counter" for p in self._fields())

    @property
    def files_undated(self) -> bool:
        """Whether undated files get a fallback of their own (``{taken:…|…}``)."""
        return any(p.name == "taken" and p.fallback is not None for p in self._fields())

    def render(self, values: Mapping[str, Any], counter: int = 1) -> str:
        """The relative destination path (``/``-separated) for one file.

        ``counter`` numbers a name taken by another file; without ``{counter}`` in
        the template, counter n > 1 appends ``-n`` to the file name's stem.
        """
        names: list[str] = []
        last = len(self.components) - 1
        for n, component in enumerate(self.components):
            rendered = _render_parts(component, values, counter)
            # {folder} spans folders; a folder part it left empty (a file at the top of
            # its source) is no folder at all.
            pieces = rendered.split(_FOLDER_BREAK)
            names.extend(p for p in pieces[:-1] if p)
            if pieces[-1] or n == last:
                names.append(pieces[-1])
        if counter > 1 and not self.has_counter:
            stem, dot, ext = names[-1].rpartition(".")
            names[-1] = f"{stem}-{counter}.{ext}" if dot and stem else f"{names[-1]}-{counter}"
        return "/".join(_safe_component(name) for name in names)


def parse(text: str) -> Template:
    """Parse and validate a template; raises ``TemplateError`` naming the problem."""
    if not isinstance(text, str) or not text.strip():
        raise TemplateError("invalid_template", "the template is empty")
    if len(text) > 1000:
        raise TemplateError("invalid_template", f"the template is {len(text)} characters long")
    if text.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", text):
        raise TemplateError(
            "template_escapes", f"the template must be a relative path, got {text!r}"
        )
    components = []
    for raw in text.split("/"):
        parts = _parse_component(raw, text)
        literal = "".join(p for p in parts if isinstance(p, str))
        if not parts:
            raise TemplateError(
                "invalid_template", f"empty folder name (a doubled or trailing '/') in {text!r}"
            )
        if literal.strip() in (".", "..") and len(parts) == 1:
            raise TemplateError(
                "template_escapes", f"{literal!r} in a template may leave the destination: {text!r}"
            )
        components.append(tuple(parts))
    if not any(isinstance(p, _Field) for p in components[-1]):
        raise TemplateError(
            "invalid_template",
            f"the file name part of the template must use a field (every photo would "
            f"get the same name): {text!r}",
        )
    return Template(text, tuple(components))


def _parse_component(raw: str, text: str) -> list[Part]:
    """Literals and fields; a field's fallback (after ``|``) holds literals and fields
    with no fallback of their own."""
    parts: list[Part] = []
    position = 0
    while position < len(raw):
        start = raw.find("{", position)
        if start < 0:
            parts.extend(_literal(raw[position:], text))
            break
        parts.extend(_literal(raw[position:start], text))
        end = _closing_brace(raw, start, text)
        parts.append(_parse_field(raw[start + 1 : end], text))
        position = end + 1
    return parts


def _closing_brace(raw: str, start: int, text: str) -> int:
    """Where the field opened at ``start`` closes (one level of fields inside it)."""
    depth = 0
    for index in range(start, len(raw)):
        if raw[index] == "{":
            depth += 1
            if depth > 2:
                raise TemplateError("invalid_template", f"fields nest only once in {text!r}")
        elif raw[index] == "}":
            depth -= 1
            if depth == 0:
                return index
    raise TemplateError("invalid_template", f"unbalanced brace in {text!r}")


def _literal(chunk: str, text: str) -> list[Part]:
    if not chunk:
        return []
    if "{" in chunk or "}" in chunk:
        raise TemplateError("invalid_template", f"unbalanced brace in {text!r}")
    bad = sorted({c for c in chunk if c in _FORBIDDEN or unicodedata.category(c)[0] == "C"})
    if bad:
        raise TemplateError(
            "invalid_template", f"characters {bad!r} are not allowed in names: {text!r}"
        )
    return [chunk]


def _parse_field(body: str, text: str, *, nested: bool = False) -> _Field:
    head, bar, rest = body.partition("|")
    if bar and nested:
        raise TemplateError(
            "invalid_template", f"a fallback cannot have a fallback of its own: {text!r}"
        )
    if "{" in head or "}" in head:
        raise TemplateError("invalid_template", f"unbalanced brace in {text!r}")
    field = _parse_plain_field(head, text)
    if not bar:
        return field
    if field.name == "counter":
        raise TemplateError("invalid_template", f"{{counter}} has no fallback: {text!r}")
    fallback: list[Part] = []
    position = 0
    while position < len(rest):
        start = rest.find("{", position)
        if start < 0:
            fallback.extend(_literal(rest[position:], text))
            break
        fallback.extend(_literal(rest[position:start], text))
        end = rest.find("}", start)
        if end < 0:
            raise TemplateError("invalid_template", f"unbalanced brace in {text!r}")
        fallback.append(_parse_field(rest[start + 1 : end], text, nested=True))
        position = end + 1
    return _Field(field.name, field.spec, tuple(fallback))


def _parse_plain_field(body: str, text: str) -> _Field:
    name, _, spec = body.partition(":")
    if name not in FIELDS:
        raise TemplateError(
            "invalid_template",
            f"unknown field {{{name}}} in {text!r}; fields: {', '.join(sorted(FIELDS))}",
        )
    if name == "taken":
        directives = re.findall(r"%(.)", spec)
        if not spec or not directives:
            raise TemplateError(
                "invalid_template", f"{{taken}} needs a date format such as {{taken:%Y}}: {text!r}"
            )
        unknown = sorted(set(directives) - _TAKEN_DIRECTIVES)
        if unknown or not re.fullmatch(r"(?:[^%]|%.)*", spec):
            raise TemplateError(
                "invalid_template", f"unsupported date directives {unknown} in {text!r}"
            )
        _literal(re.sub(r"%.", "", spec), text)
    elif name == "counter":
        if spec and not re.fullmatch(r"0?[1-9]d?", spec):
            raise TemplateError(
                "invalid_template", f"{{counter}} takes a width such as {{counter:03}}: {text!r}"
            )
    elif spec:
        raise TemplateError("invalid_template", f"field {{{name}}} takes no format: {text!r}")
    return _Field(name, spec)


def _render_parts(parts: Iterable[Part], values: Mapping[str, Any], counter: int) -> str:
    return "".join(p if isinstance(p, str) else _render_field(p, values, counter) for p in parts)


def is_undated(values: Mapping[str, Any]) -> bool:
    """Whether a file's only date is no evidence of when it was taken (its mtime)."""
    # Here, not at the top: the CLI reads DEFAULT_TEMPLATE without loading `media`.
    from photo_pipeline.media.capture_time import UNDATED_SOURCES

    return values.get(TAKEN_SOURCE) in UNDATED_SOURCES or _as_datetime(values.get("taken")) is None


def _render_field(field: _Field, values: Mapping[str, Any], counter: int) -> str:
    if field.name == "counter":
        width = int(field.spec.rstrip("d") or 0)
        return str(counter).zfill(width)
    value = values.get(field.name)
    if field.fallback is not None:
        missing = is_undated(values) if field.name == "taken" else value in (None, "")
        if missing:
            return _render_parts(field.fallback, values, counter)
    if field.name == "taken":
        taken = _as_datetime(value)
        return _clean(taken.strftime(field.spec)) if taken is not None else UNKNOWN
    if field.name == "original_name":
        return _clean(value, limit=150)
    if field.name == "folder":
        # A folder name per part, each as safe as any other name.
        parts = [part for part in str(value or "").split("/") if part]
        return "".join(_safe_component(_clean(part)) + _FOLDER_BREAK for part in parts)
    return _clean(value)


def _as_datetime(value: Any) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if isinstance(value, str) and value:
        try:
            return datetime.fromisoformat(value)
        except ValueError:
            return None
    return None


# Controls, format characters (bidi overrides among them), surrogates, private and
# unassigned code points, line and paragraph separators: never in a name.
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp"})
# But the zero-width (non-)joiner, format characters that spell emoji sequences
# (👨‍👩‍👧) and words of Persian or Indic scripts: kept.
_JOINERS = "\u200c\u200d"


def _clean(value: Any, *, limit: int = _MAX_FIELD_CHARS) -> str:
    """One field value as a fragment of a name: no separators, control or reserved
    characters, no leading dots (hidden files, ``..``); empty becomes ``unknown``."""
    if value is None:
        return UNKNOWN
    text = unicodedata.normalize("NFC", str(value))
    text = "".join(
        "_"
        if c in _FORBIDDEN or (unicodedata.category(c) in _UNSAFE_CATEGORIES and c not in _JOINERS)
        else c
        for c in text
    )
    text = " ".join(text.split())  # tabs and runs of spaces become one space
    text = text.lstrip(". ").rstrip(". ")[:limit].rstrip(". ")
    return text or UNKNOWN


def _safe_component(name: str) -> str:
    """A whole rendered name: not empty, ``.`` or ``..``, not reserved on Windows,
    no trailing dot or space, at most 255 bytes (shortening the stem, keeping the
    extension)."""
    name = name.rstrip(" .") or UNKNOWN
    if name.startswith("."):
        name = "_" + name[1:]
    stem = name.split(".", 1)[0].strip().upper()
    if stem in _RESERVED:
        name = "_" + name
    encoded = name.encode("utf-8")
    if len(encoded) > _MAX_NAME_BYTES:
        stem, dot, ext = name.rpartition(".")
        if not dot or len(ext.encode()) > 16:
            stem, ext = name, ""
        budget = _MAX_NAME_BYTES - len(ext.encode()) - (1 if ext else 0)
        stem = stem.encode("utf-8")[:budget].decode("utf-8", "ignore").rstrip(" .") or UNKNOWN
        name = f"{stem}.{ext}" if ext else stem
    return name


def sibling(relative: str, suffix: str) -> str:
    """The name next to ``relative`` sharing its stem, with ``suffix`` (``.xmp``,
    ``.JPG.xmp``, ``.cr2``): how companions and sidecars follow their photo."""
    folder, _, name = relative.rpartition("/")
    stem = name.rsplit(".", 1)[0] if "." in name.lstrip(".") else name
    cleaned = "".join("." + _clean(part, limit=16) for part in suffix.split(".") if part)
    new = _safe_component(stem + cleaned)
    return f"{folder}/{new}" if folder else new


def extension(original_name: str, file_format: str | None) -> str:
    """The ``{ext}`` of a file: its own extension, lower-cased, else the format's."""
    _, ext = os.path.splitext(original_name)
    ext = ext[1:].lower()
    if ext and re.fullmatch(r"[a-z0-9]{1,10}", ext):
        return ext
    return _EXTENSIONS.get(file_format or "", UNKNOWN)


def inside(destination: str, relative: str) -> str:
    """The absolute path of ``relative`` below ``destination``; raises
    ``template_escapes`` if it would land anywhere else (a last line of defence)."""
    root = os.path.normpath(destination)
    target = os.path.normpath(os.path.join(root, relative))
    parts = relative.split("/")
    if (
        os.path.isabs(relative)
        or any(p in ("", ".", "..") for p in parts)
        or os.path.commonpath([root, target]) != root
        or target == root
    ):
        raise TemplateError(
            "template_escapes", f"{relative!r} would leave the destination {destination}"
        )
    return target
