"""The on-disk layout of the sample store, as the maintenance job walks it.

    <root>/<table>/date=YYYY-MM-DD/hour=HH/<cycle>-<id>.parquet     one file per collection cycle
    <root>/<table>/date=YYYY-MM-DD/hour=HH/.<cycle>-<id>.parquet.tmp a write in flight (or a crash)
    <root>/<table>/date=YYYY-MM-DD/.hour=HH.compact                  a compaction being built
    <root>/<table>/date=YYYY-MM-DD/.hour=HH.old                      the files a compaction replaced
    <root>/_quarantine/...                                           files recovery moved aside

Spark and the store reader ignore names starting with "." or "_", and read only `hour=HH`
directories, so nothing but finished Parquet files is ever visible to an evaluation.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rules.tables import TABLES

QUARANTINE = "_quarantine"
_DATE = re.compile(r"^date=(\d{4}-\d{2}-\d{2})$")
_HOUR = re.compile(r"^hour=(\d{2})$")
HOUR = timedelta(hours=1)


@dataclass(frozen=True)
class HourPartition:
    """One table's directory for one UTC hour."""

    table: str
    path: Path
    start: datetime

    @property
    def end(self) -> datetime:
        """The first instant after this hour."""
        return self.start + HOUR

    def data_files(self) -> list[Path]:
        """The finished Parquet files a reader sees, oldest cycle first."""
        return sorted(p for p in self.path.iterdir() if is_data_file(p))

    def size(self) -> int:
        """Bytes of every file in the partition, temp files included (they use disk too)."""
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())


def is_data_file(path: Path) -> bool:
    """A finished Parquet file: what Spark reads."""
    return path.suffix == ".parquet" and not path.name.startswith((".", "_")) and path.is_file()


def date_dirs(root: Path, table: str) -> Iterator[Path]:
    """The `date=` directories of one table."""
    base = root / table
    if not base.is_dir():
        return
    for entry in sorted(base.iterdir()):
        if entry.is_dir() and _DATE.match(entry.name):
            yield entry


def hour_partitions(root: Path) -> list[HourPartition]:
    """Every hour partition of every catalog table in the store, oldest first."""
    found: list[HourPartition] = []
    for table in TABLES:
        for date_dir in date_dirs(root, table):
            day = datetime.strptime(_DATE.match(date_dir.name).group(1), "%Y-%m-%d").replace(tzinfo=UTC)
            for entry in date_dir.iterdir():
                hour = _HOUR.match(entry.name)
                if hour and entry.is_dir():
                    found.append(HourPartition(table, entry, day + timedelta(hours=int(hour.group(1)))))
    found.sort(key=lambda p: (p.start, p.table))
    return found
