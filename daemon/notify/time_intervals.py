"""Whether a moment falls in a named time interval (Alertmanager's semantics: every listed
condition must hold, an empty list matches anything, times are in the interval's location)."""

from __future__ import annotations

import calendar
from collections.abc import Iterable, Mapping
from datetime import datetime
from zoneinfo import ZoneInfo

from config.routing import WEEKDAYS, TimeIntervalConfig, TimeIntervalSpec

MONTHS = tuple(m.lower() for m in calendar.month_name[1:])


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


def _in_ranges(value: int, items: Iterable[str], names: tuple[str, ...] = (), last: int = 0) -> bool:
    def number(text: str) -> int:
        text = text.strip().lower()
        if text in names:
            return names.index(text) + 1
        n = int(text)
        return last + 1 + n if n < 0 else n  # -1 is the last day of the month

    for item in items:
        low, _, high = item.partition(":")
        start, end = number(low), number(high or low)
        if start <= value <= end:
            return True
    return False


def spec_contains(spec: TimeIntervalSpec, now: datetime) -> bool:
    """True when `now` (aware) satisfies every condition of `spec`."""
    local = now.astimezone(ZoneInfo(spec.location))
    if spec.times:
        minute = local.hour * 60 + local.minute
        if not any(_minutes(t.start_time) <= minute < _minutes(t.end_time) for t in spec.times):
            return False
    if spec.weekdays and not _in_ranges(local.weekday() + 1, spec.weekdays, WEEKDAYS):
        return False
    days_in_month = calendar.monthrange(local.year, local.month)[1]
    if spec.days_of_month and not _in_ranges(local.day, spec.days_of_month, last=days_in_month):
        return False
    return not (spec.months and not _in_ranges(local.month, spec.months, MONTHS))


def in_any(intervals: Mapping[str, TimeIntervalConfig], names: Iterable[str], now: datetime) -> bool:
    """True when `now` is inside any window of any of the named intervals."""
    return any(spec_contains(spec, now) for name in names for spec in intervals[name].time_intervals)
