"""The `stall` plan: how long each series' value has been frozen with work waiting.

Semantics:
- Samples are the series' rows in [now - (longest stall measured) - stale_after, now].
- A sample is "stalled" when its value equals the newest value and `while` is true on it.
  The stall began at the first sample after the last non-stalled one (or at the oldest sample
  read); its length is newest sample ts - that sample's ts, in seconds (the alert's value).
- `moving`, when given, must have taken more than one value during the stall (the client kept
  pulling while its cache stood still).
- Fires with `severity` when the stall is at least `over`, critical at least `critical_after`.
- `where` filters series on their newest sample; a series whose newest sample is older than
  stale_after is no_data. `by` coarser than the key reduces the stall lengths (`reduce:`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.expressions import Expression
from rules.kinds.stall import StallRule
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import (
    excluded,
    in_window,
    newest_of,
    newest_per_series,
    seconds_between,
    series_hashes,
    unpack_newest,
)
from spark.kinds.levels import Judge, duration_judge, finish, level_columns


def _may_stall(rows: DataFrame, recent: datetime, fresh: datetime) -> DataFrame:
    """The series (as their key hashes _h1, _h2) that can give a finding: stale ones, and those whose
    samples since `recent` (now - over) all hold one value with `while` true.

    Any other series is fresh and has a sample since `recent` that differs from its current value
    or fails `while`: its stall began after that sample, so it is shorter than `over` and fires
    nothing. Sorting only the few series left (stuck ones, stale ones) instead of every series of
    the window took the two built-in stall rules from 11.7-12.5 s to 4.9-6.3 s at 160k series,
    2.0-2.9 s to 1.5-2.3 s at 16k. (With `by` coarser than the key the reduction would see fewer
    series, so reducing rules skip this.)
    """
    since = F.col("ts") >= F.lit(recent)
    value = F.when(since, F.col("_v"))
    changed = ((F.max(value) != F.min(value))
               | ((F.count(F.when(since & F.col("_v").isNull(), 1)) > 0) & (F.count(value) > 0))
               | ~F.min(F.when(since, F.col("_w"))))
    series = rows.groupBy("_h1", "_h2").agg(F.coalesce(changed, F.lit(False)).alias("_changed"),
                                            F.max("ts").alias("_last"))
    return series.where(~F.col("_changed") | (F.col("_last") < F.lit(fresh))).select("_h1", "_h2")


def _sample_columns(rule: StallRule, now: datetime) -> dict[str, Column]:
    """Per sample: the value (_v), while (_w), moving value (_m) and where (_where)."""
    table = rule.table_def

    def compiled(expr: Expression | None, default: bool | None) -> Column:
        return compile_expression(expr.tree, table, now) if expr is not None else F.lit(default)

    return {
        "_v": compiled(rule.value, None),
        "_w": F.coalesce(compiled(rule.while_, True), F.lit(False)),
        "_m": compiled(rule.moving, None),
        "_where": F.coalesce(compiled(rule.where, True), F.lit(False)),
    }


def _judge(rule: StallRule) -> Judge:
    critical = rule.critical_after.total_seconds() if rule.critical_after is not None else None
    return duration_judge(rule.over.total_seconds(), critical, rule.severity)


def plan_stall(rule: StallRule, df: DataFrame, now: datetime, stale_after: timedelta,
               quiet: DataFrame | None = None) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape.

    `quiet`, when the evaluator knows it (spark/newest_state.py), holds the series (_h1, _h2) whose
    newest sample in the window is older than `now - over`: the prefilter then reads only the rows
    since `now - over` (3 of StuckMessage's 11 minutes) instead of the whole window. At 1.6M queue
    series the two built-in stall rules took 27-30 s instead of 49-57 s, the whole pack 45-48 s
    instead of 83-89 s.
    """
    table = rule.table_def
    key = table.key

    rows = excluded(in_window(df, now - rule.window() - stale_after, now), rule)
    rows = rows.withColumns(per_rule(rule, "stall-samples", lambda: _sample_columns(rule, now)))
    if not rule.reduces:
        rows = rows.withColumns(series_hashes(key))
        recent, fresh = now - rule.over, now - stale_after
        if quiet is None:
            candidates = _may_stall(rows, recent, fresh)
        else:
            # A series with no sample since `recent` is quiet; any other is judged on those samples.
            candidates = _may_stall(rows.where(F.col("ts") >= F.lit(recent)), recent, fresh).unionByName(quiet)
        rows = rows.join(F.broadcast(candidates), ["_h1", "_h2"], "left_semi").drop("_h1", "_h2")
    series_window = Window.partitionBy(*key)
    current = F.max_by("_v", "ts").over(series_window)
    broken = ~F.col("_v").eqNullSafe(current) | ~F.col("_w")
    rows = rows.withColumn("_broken_at", F.max(F.when(broken, F.col("ts"))).over(series_window))
    in_stall = F.col("_broken_at").isNull() | (F.col("ts") > F.col("_broken_at"))
    inputs = rule.template_inputs()
    carried = [c for c in (*inputs, "_where") if c not in key]
    series = rows.groupBy(*key).agg(
        F.min(F.when(in_stall, F.col("ts"))).alias("_since"),
        F.max("ts").alias("_last"),
        F.count_distinct(F.when(in_stall, F.col("_m"))).alias("_moves"),
        newest_of(carried),
    )
    series = unpack_newest(series, carried).where(F.col("_where"))
    stalled = seconds_between("_last", "_since")
    if rule.moving is not None:
        stalled = F.when(F.col("_moves") > 1, stalled)
    series = series.withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "_value": stalled,
        **level_columns(rule, now),
    })
    return finish(series, rule, inputs, judge=_judge(rule))


def plan_stall_from_runs(rule: StallRule, newest: DataFrame, now: datetime, stale_after: timedelta,
                         candidates: DataFrame) -> DataFrame:
    """Findings of `rule` from each series' newest sample and its run, kept by spark/stall_runs.py.

    `newest` holds at least every series' newest sample of the window (spark/newest.py), and
    `candidates` the series that may have stalled for `over`, with where the stall began (_h1,
    _h2, _since). Same findings as plan_stall, without reading the window.
    """
    table = rule.table_def
    key = table.key
    rows = newest_per_series(excluded(in_window(newest, now - rule.window() - stale_after, now), rule), key)
    rows = rows.withColumns(series_hashes(key)).join(F.broadcast(candidates), ["_h1", "_h2"], "left")
    rows = rows.drop("_h1", "_h2")
    if rule.where is not None:
        rows = rows.where(per_rule(rule, "where", lambda: F.coalesce(compile_expression(rule.where.tree, table, now),
                                                                    F.lit(False))))
    series = rows.withColumns({
        "_fresh": F.col("ts") >= F.lit(now - stale_after),
        "_value": seconds_between("ts", "_since"),
        **level_columns(rule, now),
    })
    return finish(series, rule, rule.template_inputs(), judge=_judge(rule))
