"""Durations and sizes as rule authors write them."""

from datetime import timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rules.durations import format_duration, parse_duration, parse_size


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("5m", timedelta(minutes=5)),
        ("2h", timedelta(hours=2)),
        ("1d", timedelta(days=1)),
        ("1h30m", timedelta(minutes=90)),
        ("0s", timedelta(0)),
        ("250ms", timedelta(milliseconds=250)),
    ],
)
def test_durations_parse(text, expected):
    assert parse_duration(text) == expected


@pytest.mark.parametrize("text", ["5 minutes", "", "5", "m5", "30m1h", "1.5h", "-5m"])
def test_bad_duration_says_what_is_expected(text):
    with pytest.raises(ValueError, match=r"expected a duration like 30s, 5m, 2h.*got") as info:
        parse_duration(text)
    assert repr(text) in str(info.value)


@given(st.integers(min_value=0, max_value=10**9))
def test_format_duration_round_trips(ms):
    value = timedelta(milliseconds=ms)
    assert parse_duration(format_duration(value)) == value


@pytest.mark.parametrize(
    ("text", "expected"),
    [("100MiB", 100 * 1024**2), ("1.5GiB", 1536 * 1024**2), ("512KiB", 512 * 1024), ("10MB", 10_000_000), ("7B", 7)],
)
def test_sizes_parse(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["100", "100 mb", "1.5XB", "MiB"])
def test_bad_size_says_what_is_expected(text):
    with pytest.raises(ValueError, match="expected a size like 512KiB"):
        parse_size(text)
