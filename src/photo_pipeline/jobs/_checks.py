"""Input checks for the coordinator: each failure names the field, rule and value."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from photo_pipeline.jobs.errors import InvalidArgument
from photo_pipeline.jobs.states import JobState

JOB_TYPE_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,99}")
MAX_KEY_LENGTH = 200
MAX_ITEM_KEY_LENGTH = 2048
MAX_PARAMS_BYTES = 1_000_000
MAX_LEASE_SECONDS = 86_400
INT32_MAX = 2**31 - 1


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def job_type(value: object) -> str:
    if not isinstance(value, str) or not JOB_TYPE_PATTERN.fullmatch(value):
        raise InvalidArgument(
            "invalid_job_type",
            "job_type must be 1-100 characters of letters, digits and _.:- starting with a "
            f"letter or digit, got {_show(value)}",
        )
    return value


def job_types(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        values = [values]
    checked = [job_type(v) for v in values]
    if not checked:
        raise InvalidArgument("invalid_job_type", "job_types must name at least one job type")
    return checked


def job_state(value: str) -> JobState:
    try:
        return JobState(value)
    except ValueError:
        raise InvalidArgument(
            "invalid_state", f"state must be one of {', '.join(JobState)}, got {value!r}"
        ) from None


def key(field: str, value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_KEY_LENGTH:
        raise InvalidArgument(
            f"invalid_{field}",
            f"{field} must be a non-empty string of at most {MAX_KEY_LENGTH} characters, "
            f"got {_show(value)}",
        )
    return value


def optional_key(field: str, value: object) -> str | None:
    return None if value is None else key(field, value)


def item_keys(values: Iterable[str]) -> list[str]:
    if isinstance(values, str):
        raise InvalidArgument("invalid_items", "items must be a list of keys, not one string")
    keys = list(values)
    for item in keys:
        item_key(item)
    if len(set(keys)) != len(keys):
        raise InvalidArgument("duplicate_item", "items must not list the same key twice")
    return keys


def item_key(value: object) -> str:
    if not isinstance(value, str) or not value or len(value) > MAX_ITEM_KEY_LENGTH:
        raise InvalidArgument(
            "invalid_item_key",
            f"item keys must be non-empty strings of at most {MAX_ITEM_KEY_LENGTH} "
            f"characters, got {_show(value)}",
        )
    return value


def params(value: object) -> dict[str, Any]:
    if value is None or value == {}:
        return {}
    if not isinstance(value, dict):
        raise InvalidArgument("invalid_params", f"params must be a JSON object, got {_show(value)}")
    try:
        encoded = canonical_json(value)
    except (TypeError, ValueError) as exc:
        raise InvalidArgument("invalid_params", f"params must be JSON-serialisable: {exc}") from exc
    if len(encoded) > MAX_PARAMS_BYTES:
        raise InvalidArgument(
            "invalid_params", f"params must encode to at most {MAX_PARAMS_BYTES} bytes"
        )
    # Round-trip so callers get back exactly what the database will hold.
    round_tripped: dict[str, Any] = json.loads(encoded)
    return round_tripped


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), allow_nan=False)


def integer(field: str, value: object, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise InvalidArgument(
            f"invalid_{field}",
            f"{field} must be an integer from {low} to {high}, got {_show(value)}",
        )
    return value


def lease_seconds(value: object) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok or not math.isfinite(value) or not 0 < value <= MAX_LEASE_SECONDS:  # type: ignore[operator,arg-type]
        raise InvalidArgument(
            "invalid_lease",
            f"lease_seconds must be a positive number of seconds up to {MAX_LEASE_SECONDS}, "
            f"got {_show(value)}",
        )
    return float(value)  # type: ignore[arg-type]


MAX_CLAIM_LIMIT = 1000


def claim_limit(value: object) -> int:
    """How many jobs one claim may lease: a whole number from 1."""
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok or not 1 <= value <= MAX_CLAIM_LIMIT:  # type: ignore[operator]
        raise InvalidArgument(
            "invalid_claim_limit",
            f"limit must be a whole number from 1 to {MAX_CLAIM_LIMIT}, got {_show(value)}",
        )
    return value  # type: ignore[return-value]


def aware_time(field: str, value: object) -> datetime:
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidArgument(
            f"invalid_{field}", f"{field} must be a timezone-aware datetime, got {_show(value)}"
        )
    return value


def error(value: object) -> tuple[str, str] | None:
    if value is None:
        return None
    if (
        not isinstance(value, tuple)
        or len(value) != 2
        or not all(isinstance(part, str) for part in value)
        or not value[0]
    ):
        raise InvalidArgument(
            "invalid_error", f"error must be a (code, message) pair of strings, got {_show(value)}"
        )
    return value[0][:100], value[1]
