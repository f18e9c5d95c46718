"""Epoch milliseconds as RocketMQ reports them -> UTC datetimes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def ms_to_datetime(ms: int | None) -> datetime | None:
    """A tz-aware UTC datetime from epoch milliseconds; None for 0, negative or absurd values."""
    if ms is None or ms <= 0:
        return None
    try:
        return _EPOCH + timedelta(milliseconds=ms)
    except OverflowError:
        return None
