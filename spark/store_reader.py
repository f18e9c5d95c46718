"""Read one table's samples over a time window from the local Parquet store, reading only its partitions."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from rules.expressions import parse
from rules.tables import Table
from spark.expressions import compile_expression
from spark.schema import stored_schema


def as_utc(moment: datetime) -> datetime:
    """`moment` in UTC; a naive datetime is taken to be UTC already."""
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def partition_paths(root: str | Path, table: Table, start: datetime, end: datetime) -> list[str]:
    """Existing `date=/hour=` directories of `table` overlapping [start, end] that hold Parquet files."""
    base = Path(root) / table.name
    hour = as_utc(start).replace(minute=0, second=0, microsecond=0)
    last = as_utc(end)
    paths: list[str] = []
    # Walking the hours of the window touches only the directories it needs; listing the whole
    # table would cost a stat per hour of retention on every cycle.
    while hour <= last:
        directory = base / f"date={hour:%Y-%m-%d}" / f"hour={hour:%H}"
        if directory.is_dir() and any(p.suffix == ".parquet" and not p.name.startswith(".")
                                      for p in directory.iterdir()):
            paths.append(str(directory))
        hour += timedelta(hours=1)
    return paths


def window_files(root: str | Path, table: Table, start: datetime, end: datetime) -> list[Path]:
    """The Parquet files of `table`'s partitions overlapping [start, end]."""
    return [path for directory in partition_paths(root, table, start, end) for path in Path(directory).iterdir()
            if path.suffix == ".parquet" and not path.name.startswith(".")]


@dataclass(frozen=True)
class FileFacts:
    """A store file's rows and smallest and largest ts, from its Parquet footer (None without statistics)."""

    rows: int
    low: datetime | None
    high: datetime | None


# Footer facts by (path, size, mtime): files are written once under a new name (compaction writes
# new files), so facts never go stale, and every cycle would otherwise re-read ~30 footers per
# table, several times.
_facts: dict[tuple[str, int, int], FileFacts] = {}
_FACTS_CACHE_MAX = 100_000


def file_facts(path: str | Path) -> FileFacts:
    """The footer facts of one store file (cached)."""
    stat = Path(path).stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    facts = _facts.get(key)
    if facts is None:
        if len(_facts) >= _FACTS_CACHE_MAX:
            _facts.clear()
        facts = _facts[key] = _read_facts(str(path))
    return facts


def _read_facts(path: str) -> FileFacts:
    meta = pq.read_metadata(path)
    index = meta.schema.to_arrow_schema().get_field_index("ts")
    low = high = None
    for group in range(meta.num_row_groups):
        stats = meta.row_group(group).column(index).statistics
        if stats is None or not stats.has_min_max or not isinstance(stats.max, datetime):
            return FileFacts(meta.num_rows, None, None)
        lo, hi = (v.replace(tzinfo=UTC) if v.tzinfo is None else v for v in (stats.min, stats.max))
        low = lo if low is None or lo < low else low
        high = hi if high is None or hi > high else high
    return FileFacts(meta.num_rows, low, high)


def one_cycle(paths: Sequence[str | Path]) -> bool:
    """True when every file of `paths` holds rows of one and the same ts (from footers): one
    collection cycle, which stamps everything it writes with its ts."""
    bounds = {(facts.low, facts.high) for facts in map(file_facts, paths)}
    low, high = next(iter(bounds))
    return len(bounds) == 1 and low is not None and low == high


def window_rows(root: str | Path, table: Table, start: datetime, end: datetime) -> int:
    """Rows in the Parquet files of `table`'s partitions overlapping [start, end], from their footers."""
    total = 0
    for path in window_files(root, table, start, end):
        try:
            total += file_facts(path).rows
        except (OSError, pa.ArrowInvalid):
            continue  # a file being replaced by compaction: the count is only a size hint
    return total


def rows_at(root: str | Path, table: Table, times: Sequence[datetime]) -> int:
    """Rows of the files of `table` whose ts range holds one of `times` (from footers): what a read
    of those times scans at most (a file without statistics counts whole)."""
    total = 0
    for path in {p for moment in times for p in window_files(root, table, moment, moment)}:
        try:
            facts = file_facts(path)
        except (OSError, pa.ArrowInvalid):
            continue  # a file being replaced by compaction: the count is only a size hint
        if facts.low is None or facts.high is None or any(facts.low <= as_utc(t) <= facts.high for t in times):
            total += facts.rows
    return total


def with_derived(df: DataFrame, table: Table) -> DataFrame:
    """`df` plus the table's derived columns, computed from their rule-language definitions."""
    derived = {c.name: compile_expression(parse(c.derived or ""), table) for c in table.derived_columns}
    return df.withColumns(derived) if derived else df


def read_window(spark: SparkSession, root: str | Path, table: Table, start: datetime, end: datetime,
                one_partition: bool = False) -> DataFrame:
    """Samples of `table` with start <= ts <= end, derived columns included; empty (typed) if none.

    `one_partition` reads them as a single partition: every aggregate, window and join above it then
    runs in the same task, without a shuffle (spark/evaluate.py decides when that pays).
    """
    schema = stored_schema(table)
    paths = partition_paths(root, table, start, end)
    if paths:
        # Leaf directories are passed without basePath, so Spark adds no date/hour partition columns;
        # the select would keep exactly the catalog's columns even so (a select costs ~4 JVM round
        # trips per column, reading the schema 2).
        df = spark.read.schema(schema).parquet(*paths)
        if df.columns != schema.fieldNames():
            df = df.select(*schema.fieldNames())
        df = df.where((F.col("ts") >= F.lit(as_utc(start))) & (F.col("ts") <= F.lit(as_utc(end))))
    else:
        df = spark.createDataFrame([], schema)
    if one_partition:
        # A single partition satisfies every grouping a plan above asks for, so Spark plans no
        # Exchange; filters added later are still pushed below it into the Parquet scan.
        df = df.coalesce(1)
    return with_derived(df, table)
