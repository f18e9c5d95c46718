"""The config files' duration type: `30s`, `5m`, `1h30m`, or a bare number of seconds (the config's
habit, unlike rule files, where a bare number is refused)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any

from pydantic import BeforeValidator

from rules.durations import parse_duration


def _duration(value: Any) -> Any:
    if isinstance(value, str):
        return parse_duration(value)
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    return value


Duration = Annotated[timedelta, BeforeValidator(_duration)]
"""A pydantic field type for config durations: a duration string or seconds."""
