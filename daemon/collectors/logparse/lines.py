"""Reading RocketMQ log files: plain or gzip'd, physical lines split where several log records were
glued together, each record's time parsed in the zone its writer used and turned into UTC."""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

# Broker-side logback patterns print GMT+8 whatever the host's zone (ref §5.4, §5.7), and the 5.x
# client pattern too (ref §4); 4.9.x client logs use the JVM's local zone.
GMT8 = timezone(timedelta(hours=8))

# Where a new record starts inside a physical line: a timestamp followed by a level.
_RECORD_START = re.compile(
    r"(?<=\S)\s*(?=\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:[,.]\d{3})? +(?:TRACE|DEBUG|INFO|WARN|ERROR) )"
)


@dataclass(frozen=True)
class Problem:
    """A line that could not be read, with where it is."""

    file: str
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass(frozen=True)
class Record:
    """One log record: where it is, when (UTC), level, thread or logger, message."""

    file: str
    line: int
    ts: datetime
    level: str
    source: str
    message: str


def open_text(path: Path) -> Iterator[str]:
    """The file's lines (gzip'd rolled files too), decoded leniently, without line endings."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        for raw in handle:
            yield raw.decode("utf-8", "replace").rstrip("\r\n")


def split_records(text: str) -> list[str]:
    """One physical line as the records it holds (copied logs sometimes lose their newlines)."""
    return [part for part in _RECORD_START.split(text) if part]


def parse_time(text: str, zone: timezone | ZoneInfo) -> datetime:
    """`2026-11-21 23:36:21,388`, `...21.388` or `...21` in `zone`, as an aware UTC datetime."""
    text = text.replace(",", ".")
    fmt = "%Y-%m-%d %H:%M:%S.%f" if "." in text else "%Y-%m-%d %H:%M:%S"
    return datetime.strptime(text, fmt).replace(tzinfo=zone).astimezone(UTC)
