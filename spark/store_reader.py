"""Read one table's samples from the Parquet store, opening only the files holding them: over a time
window (the reference path), or the rows of given committed cycles (the kept state's fold)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from rules.expressions import parse
from rules.tables import Table
from spark.expressions import compile_expression
from spark.schema import stored_schema
from spark.sql import name
from spark.store_layout import (
    Commit,
    as_utc,
    committed_file_sets,
    data_files,
    newest_committed,
    partitions_between,
)

__all__ = [
    "FileFacts", "as_utc", "file_facts", "newest_committed", "overlapping_files", "partition_paths", "read_commits",
    "read_window", "window_files", "window_rows", "with_derived",
]


def partition_paths(root: str | Path, table: Table, start: datetime, end: datetime) -> list[str]:
    """Existing `date=/hour=` directories of `table` overlapping [start, end] that hold Parquet files."""
    return [str(directory) for directory in partitions_between(root, table.name, start, end)]


def window_files(root: str | Path, table: Table, start: datetime, end: datetime) -> list[Path]:
    """The Parquet files of `table`'s partitions overlapping [start, end]."""
    return [path for directory in partitions_between(root, table.name, start, end) for path in data_files(directory)]


@dataclass(frozen=True)
class FileFacts:
    """A store file's rows and smallest and largest ts, from its Parquet footer (None without statistics)."""

    rows: int
    low: datetime | None
    high: datetime | None


def file_facts(path: str | Path) -> FileFacts:
    """The footer facts of one store file (a footer read: the reference path reads a window's ~30
    files per table once per evaluation, and the fold only the files of a compacted hour)."""
    Path(path).stat()  # FileNotFoundError for a file compaction replaced since it was listed
    meta = pq.read_metadata(str(path))
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


def overlapping_files(root: str | Path, table: Table, start: datetime, end: datetime) -> list[Path]:
    """The files of `table` whose rows' ts range (from footers) meets [start, end]; a file without
    statistics counts. The hour being written holds up to 120 cycles, of which a 15-minute window
    needs 31: Spark would open every other file's footer too, in every task reading the window."""
    return [path for path, _ in _overlapping(root, table, start, end)]


def window_rows(root: str | Path, table: Table, start: datetime, end: datetime) -> int:
    """Rows in the Parquet files of `table` holding rows in [start, end], from their footers."""
    return sum(facts.rows for _, facts in _overlapping(root, table, start, end))


def _overlapping(root: str | Path, table: Table, start: datetime, end: datetime) -> list[tuple[Path, FileFacts]]:
    low, high = as_utc(start), as_utc(end)
    return [(path, facts) for path, facts in _with_facts(window_files(root, table, start, end))
            if facts.low is None or facts.high is None or (facts.low <= high and facts.high >= low)]


def _holding(root: str | Path, table: Table, times: Sequence[datetime],
             candidates: Sequence[Path] | None = None) -> list[tuple[Path, FileFacts]]:
    """The files (of `candidates`, else of the hours of `times`) whose rows' ts range holds one of `times`."""
    moments = [as_utc(t) for t in times]
    if candidates is None:
        candidates = sorted({p for moment in moments for p in window_files(root, table, moment, moment)})
    return [(path, facts) for path, facts in _with_facts(candidates)
            if facts.low is None or facts.high is None or any(facts.low <= t <= facts.high for t in moments)]


def _with_facts(paths: Iterable[Path]) -> Iterator[tuple[Path, FileFacts]]:
    for path in paths:
        try:
            yield path, file_facts(path)
        except FileNotFoundError:
            continue  # replaced by compaction since it was listed: its rows are in the new file
        except (OSError, pa.ArrowInvalid):
            # Unreadable: read it all the same, so the evaluation fails and says so (the
            # RocketwatchEvaluationFailing self-alert) instead of quietly judging without its rows.
            yield path, FileFacts(0, None, None)


def with_derived(df: DataFrame, table: Table) -> DataFrame:
    """`df` plus the table's derived columns, computed from their rule-language definitions."""
    derived = [f"{compile_expression(parse(c.derived or ''), table)} AS {name(c.name)}" for c in table.derived_columns]
    return df.selectExpr("*", *derived) if derived else df


def read_window(spark: SparkSession, root: str | Path, table: Table, start: datetime, end: datetime,
                one_partition: bool = False) -> DataFrame:
    """Samples of `table` with start <= ts <= end, derived columns included; empty (typed) if none.

    `one_partition` reads them as a single partition: every aggregate, window and join above it then
    runs in the same task, without a shuffle (spark/evaluate.py decides when that pays).
    """
    keep = (F.col("ts") >= F.lit(as_utc(start))) & (F.col("ts") <= F.lit(as_utc(end)))
    return _read(spark, table, overlapping_files(root, table, start, end), keep, one_partition)


def read_commits(spark: SparkSession, root: str | Path, table: Table, commits: Iterable[Commit],
                 one_partition: bool = False) -> DataFrame:
    """The rows of `table` that `commits` wrote, derived columns included; empty (typed) if none."""
    own: dict[Path, None] = {}
    shared: dict[Path, None] = {}
    times_by_cluster: dict[str, set[datetime]] = defaultdict(set)
    for commit in commits:
        mine, hours = committed_file_sets(root, commit, table.name)
        own.update(dict.fromkeys(mine))
        if hours:
            shared.update(dict.fromkeys(hours))
            for cluster in commit.clusters:
                times_by_cluster[cluster].add(commit.ts)
    # A commit's own file holds exactly what the cycle wrote, so it is read whole: log_event rows
    # carry their log line's time, not the cycle's. A compacted hour holds every cycle of the hour:
    # only the rows of the commits that fell back to it are kept, told apart by (cluster, ts) (one
    # cycle per cluster per ts), so those log rows are lost to the fold once their hour is compacted.
    wanted = sorted({t for times in times_by_cluster.values() for t in times})
    shared_files = [p for p, _ in _holding(root, table, wanted, [p for p in shared if p not in own])]
    frames = []
    if own:
        frames.append(_scan(spark, table, list(own)))
    if shared_files:
        keep = None
        for cluster, times in sorted(times_by_cluster.items()):
            term = (F.col("cluster") == F.lit(cluster)) & F.col("ts").isin(sorted(times))
            keep = term if keep is None else keep | term
        frames.append(_scan(spark, table, shared_files).where(keep))
    df = frames[0] if frames else _scan(spark, table, [])
    for other in frames[1:]:
        df = df.union(other)
    return _finish(df, table, one_partition)


def _scan(spark: SparkSession, table: Table, paths: Sequence[Path]) -> DataFrame:
    """The stored columns of `paths` (an empty typed frame for none)."""
    schema = stored_schema(table)
    if not paths:
        return spark.createDataFrame([], schema)
    # Files are passed by path, so Spark adds no date/hour partition columns; the select would keep
    # exactly the catalog's columns even so (a select costs ~4 JVM round trips per column, reading
    # the schema 2).
    df = spark.read.schema(schema).parquet(*(str(p) for p in paths))
    if df.columns != schema.fieldNames():
        df = df.select(*schema.fieldNames())
    return df


def _read(spark: SparkSession, table: Table, paths: Sequence[Path], keep: Column, one_partition: bool) -> DataFrame:
    df = _scan(spark, table, paths)
    return _finish(df.where(keep) if paths else df, table, one_partition)


def _finish(df: DataFrame, table: Table, one_partition: bool) -> DataFrame:
    if one_partition:
        # A single partition satisfies every grouping a plan above asks for, so Spark plans no
        # Exchange; filters added later are still pushed below it into the Parquet scan.
        df = df.coalesce(1)
    return with_derived(df, table)
