"""Pieces every kind's plan shares: the lookback, the newest sample per series, the output shape."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.base import RuleBase
from spark.column_cache import cached

# The one shape every plan returns, so all rules of a cycle union into one job.
OUTPUT_COLUMNS = ("rule", "labels", "severity", "value", "threshold", "no_data", "inputs")
_STRING_MAP = "map<string,string>"
MIN_LOOKBACK = timedelta(minutes=10)


def lookback(stale_after: timedelta) -> timedelta:
    """How far back a series is still remembered: stale (no_data) rather than gone.

    Ten times stale_after, at least 10 minutes: a collector outage of a few cycles reports
    no_data; a series gone for longer (a client that left) simply disappears.
    """
    return max(10 * stale_after, MIN_LOOKBACK)


def in_lookback(df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Rows with now - lookback <= ts <= now (the table window may be wider, for other rules)."""
    return df.where((F.col("ts") >= F.lit(now - lookback(stale_after))) & (F.col("ts") <= F.lit(now)))


def excluded(df: DataFrame, rule: RuleBase) -> DataFrame:
    """Drop rows whose column fully matches one of the rule's `exclude` regexes."""
    for condition in cached(("excluded", tuple(rule.exclude.items())), lambda: _not_matching(rule.exclude)):
        df = df.where(condition)
    return df


def _not_matching(exclude: dict[str, str]) -> list[Column]:
    # The pattern is a regex argument to rlike, not SQL text; anchored so `test` != `latest`.
    return [~F.coalesce(F.col(name).cast("string").rlike(f"^(?:{pattern})$"), F.lit(False))
            for name, pattern in exclude.items()]


def series_hashes(key: tuple[str, ...]) -> dict[str, Column]:
    """Columns _h1, _h2: two hashes of the series key (xxhash64 and murmur3, 96 bits: no collision in
    any real fleet), to group or join series by two numbers instead of their key as text."""
    # At 1.6M series, grouping by the key's strings made each stall prefilter an aggregate of 70 s.
    return dict(cached(("series_hashes", key), lambda: {"_h1": F.xxhash64(*key), "_h2": F.hash(*key)}))


# A column marking a frame that holds at most one row per series (one_row_per_series).
ONE_ROW_PER_SERIES = "_one_row_per_series"


def one_row_per_series(df: DataFrame) -> DataFrame:
    """`df`, marked as holding at most one row per series: newest_per_series then keeps it as it is.

    The evaluator marks a table's newest samples when it has proved it (spark/evaluate.py); the mark
    is a column so that it survives the filters each plan adds before asking for the newest rows.
    """
    return df.withColumn(ONE_ROW_PER_SERIES, F.lit(True))


def newest_per_series(df: DataFrame, key: tuple[str, ...]) -> DataFrame:
    """The newest row of each series (one value of `key`)."""
    if ONE_ROW_PER_SERIES in df.columns:
        # Sorting every series' rows to keep the only one: at 1.6M queue series a shuffle and a sort
        # of 1.6M rows per table and rule group, 6 s of a 14 s collect.
        return df
    # row_number over a window measured the same as groupBy + max_by(struct(...), ts) (0.72-0.76 s per
    # evaluate on a 6,400-row window, within noise) and keeps the columns flat.
    number, first = cached(("newest_per_series", key), lambda: (
        F.row_number().over(Window.partitionBy(*key).orderBy(F.col("ts").desc())), F.col("_rn") == 1))
    return df.withColumn("_rn", number).where(first).drop("_rn")


def string_map(pairs: list[tuple[str, Column]]) -> Column:
    """A map<string,string> column from (name, column) pairs."""
    if not pairs:
        return F.create_map().cast(_STRING_MAP)
    args: list[Column] = []
    for name, column in pairs:
        args.extend([F.lit(name), column.cast("string")])
    return F.create_map(*args).cast(_STRING_MAP)


def label_map(rule: RuleBase, column: Callable[[str], Column] = F.col) -> Column:
    """The alert's labels: the `by` columns as strings plus the rule's static labels.

    A `by` column that is null on the row is left out, not sent as a null label: a nullable column
    (collector_health's `broker`, null for a name server) is a label only where it has a value.
    """
    pairs = [(name, column(name)) for name in rule.group_by]
    pairs += [(name, F.lit(value)) for name, value in rule.labels.items()]
    return F.map_filter(string_map(pairs), lambda _name, value: value.isNotNull())


def in_window(df: DataFrame, start: datetime, now: datetime) -> DataFrame:
    """Rows with start <= ts <= now: the samples of an `over:` window."""
    return df.where((F.col("ts") >= F.lit(start)) & (F.col("ts") <= F.lit(now)))


def where_true(df: DataFrame, condition: Column | None) -> DataFrame:
    """Rows where `condition` is true (null counts as false); all rows when there is no condition."""
    return df if condition is None else df.where(F.coalesce(condition, F.lit(False)))


def newest_of(columns: list[str], alias: str = "_newest") -> Column:
    """Aggregate: the struct of `columns` from the row with the largest ts (unpack with unpack_newest)."""
    return cached(("newest_of", tuple(columns), alias),
                  lambda: F.max_by(F.struct(*columns), F.col("ts")).alias(alias))


def unpack_newest(df: DataFrame, columns: list[str], alias: str = "_newest") -> DataFrame:
    """Replace the struct made by newest_of with its fields as top-level columns."""
    if not columns:
        return df.drop(alias)
    unpacked = cached(("unpack_newest", tuple(columns), alias),
                      lambda: {name: F.col(alias)[name] for name in columns})
    return df.withColumns(unpacked).drop(alias)


def seconds_between(later: Column | str, earlier: Column | str) -> Column:
    """later - earlier in seconds (double), for timestamp columns (or their names)."""
    if isinstance(later, str) and isinstance(earlier, str):
        return cached(("seconds_between", later, earlier), lambda: _seconds_between(F.col(later), F.col(earlier)))
    return _seconds_between(F.col(later) if isinstance(later, str) else later,
                            F.col(earlier) if isinstance(earlier, str) else earlier)


def _seconds_between(later: Column, earlier: Column) -> Column:
    return (F.unix_micros(later) - F.unix_micros(earlier)).cast("double") / 1_000_000


def gathered(state: DataFrame | None, rows: DataFrame, partitions: int) -> DataFrame:
    """A kept frame and the rows folded into it, in at most `partitions` partitions (no shuffle).

    A steady cycle folds one collection cycle into frames of one row per series: each frame is then
    one partition, so the aggregates, windows and joins of its fold and of the rules judged from it
    need no shuffle (a checkpoint keeps its partitioning), and a cycle's parallelism is across
    frames and rules, one task each. A rebuild over a big window is spread over more partitions
    (spark/evaluate.py picks them). Unioned frames would otherwise add partitions every cycle.
    """
    return (rows if state is None else state.unionByName(rows)).coalesce(partitions)


def fold_newest(state: DataFrame | None, rows: DataFrame, key: tuple[str, ...], start: datetime,
                partitions: int) -> DataFrame:
    """Each series' newest row after adding `rows`; series with nothing since `start` are dropped."""
    return newest_per_series(gathered(state, rows, partitions), key).where(F.col("ts") >= F.lit(start))
