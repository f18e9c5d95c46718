"""Durations (`30s`, `5m`, `1h30m`) and sizes (`100MiB`, `10MB`) as rule and config files write them.

Usage:
    parse_duration("1h30m")   # timedelta(seconds=5400)
    parse_size("1.5GiB")      # 1610612736
    format_duration(timedelta(seconds=90))  # "1m30s"
"""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator, PlainSerializer, WithJsonSchema

_DURATION_UNITS: dict[str, timedelta] = {
    "ms": timedelta(milliseconds=1),
    "s": timedelta(seconds=1),
    "m": timedelta(minutes=1),
    "h": timedelta(hours=1),
    "d": timedelta(days=1),
    "w": timedelta(weeks=1),
}
# Units in descending size, so the whole string must be consumed left to right (`1h30m`, not `30m1h`).
_DURATION_RE = re.compile(r"^(?:(\d+)w)?(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m(?!s))?(?:(\d+)s)?(?:(\d+)ms)?$")
_DURATION_ORDER = ("w", "d", "h", "m", "s", "ms")

_SIZE_UNITS: dict[str, int] = {
    "B": 1,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
    "TiB": 1024**4,
}
_SIZE_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)$")


def parse_duration(text: str) -> timedelta:
    """Parse `30s`, `5m`, `2h`, `1d`, `1h30m`, `0s` into a timedelta; ValueError explains the format."""
    stripped = text.strip() if isinstance(text, str) else text
    match = _DURATION_RE.match(stripped) if isinstance(stripped, str) and stripped else None
    if match is None:
        raise ValueError(f"expected a duration like 30s, 5m, 2h or 1h30m; got {text!r}")
    total = timedelta(0)
    for unit, amount in zip(_DURATION_ORDER, match.groups(), strict=True):
        if amount is not None:
            total += int(amount) * _DURATION_UNITS[unit]
    return total


def format_duration(value: timedelta) -> str:
    """Write a timedelta back in the shortest `1h30m` form (`0s` for zero)."""
    ms = value // timedelta(milliseconds=1)
    if ms == 0:
        return "0s"
    sign = "-" if ms < 0 else ""
    ms = abs(ms)
    parts: list[str] = []
    for unit in _DURATION_ORDER:
        step = _DURATION_UNITS[unit] // timedelta(milliseconds=1)
        amount, ms = divmod(ms, step)
        if amount:
            parts.append(f"{amount}{unit}")
    return sign + "".join(parts)


def parse_size(text: str) -> int:
    """Parse `100MiB`, `1.5GiB`, `512KiB`, `10MB` into bytes; ValueError explains the format."""
    match = _SIZE_RE.match(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"expected a size like 512KiB, 100MiB, 1.5GiB or 10MB; got {text!r}")
    number, unit = match.groups()
    return int(float(number) * _SIZE_UNITS[unit])


def _duration_input(value: Any) -> timedelta:
    # A bare number is refused rather than guessed: `for: 60` could mean seconds or minutes.
    if isinstance(value, timedelta):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a duration like 30s, 5m, 2h or 1h30m; got {value!r}")
    return parse_duration(value)


def _size_input(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if not isinstance(value, str):
        raise ValueError(f"expected a size like 512KiB, 100MiB, 1.5GiB or 10MB; got {value!r}")
    return parse_size(value)


Duration = Annotated[
    timedelta,
    BeforeValidator(_duration_input),
    PlainSerializer(format_duration, return_type=str),
    WithJsonSchema({"type": "string", "pattern": r"^(\d+w)?(\d+d)?(\d+h)?(\d+m)?(\d+s)?(\d+ms)?$"}),
]
"""A pydantic field type: accepts `30s`, `5m`, `1h30m`; serialises back to that form."""

Size = Annotated[
    int,
    BeforeValidator(_size_input),
    WithJsonSchema({"type": ["string", "integer"], "examples": ["100MiB", "1.5GiB"]}),
]
"""A pydantic field type: accepts `100MiB`, `10MB` or a byte count."""
