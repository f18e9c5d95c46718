"""The sample store's hour partitions as the maintenance job walks them; the layout itself is spark/store_layout.py.

Besides what spark/store_layout.py lists, compaction leaves for a moment:

    <root>/<table>/date=YYYY-MM-DD/.hour=HH.compact                  a compaction being built
    <root>/<table>/date=YYYY-MM-DD/.hour=HH.old                      the files a compaction replaced

Spark and the store reader ignore names starting with "." or "_", and read only `hour=HH`
directories, so nothing but finished Parquet files is ever visible to an evaluation.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from rules.tables import TABLES
from spark.store_layout import HOUR, QUARANTINE, data_files, date_dirs, hour_dirs, is_data_file

__all__ = ["HOUR", "QUARANTINE", "HourPartition", "date_dirs", "hour_partitions", "is_data_file"]


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
        return data_files(self.path)

    def size(self) -> int:
        """Bytes of every file in the partition, temp files included (they use disk too)."""
        return sum(p.stat().st_size for p in self.path.iterdir() if p.is_file())


def hour_partitions(root: Path) -> list[HourPartition]:
    """Every hour partition of every catalog table in the store, oldest first."""
    found = [HourPartition(table, path, start) for table in TABLES for start, path in hour_dirs(root, table)]
    found.sort(key=lambda p: (p.start, p.table))
    return found
