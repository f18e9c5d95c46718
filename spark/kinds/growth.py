"""The `growth` kind: increase (or rate) of a value per series over the rule's `over:` window.

Semantics:
- Samples are the rows of the series in [now - over, now] matching `where`.
- counter (default): increase = sum over consecutive samples of (v - previous v), where a drop
  counts as a reset, so its contribution is v itself (Prometheus' increase(), unextrapolated).
  gauge (`counter: false`): increase = newest - oldest value of the window.
- rate = increase / seconds between the oldest and newest sample of the window.
- A series needs two samples to have a growth; one with a single fresh sample gives nothing.
- Levels are evaluated on the newest sample; a series whose newest sample is older than
  stale_after is no_data. `by` coarser than the key reduces the series' growths (`reduce:`).

Kept state: the rule's own samples in `over` (rows passing `where`), one per series and cycle. A
growth rule watches few series (DLQ and retry queues, master brokers), and the increase needs
every step inside the window, so the samples themselves are the smallest exact state.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.growth import GrowthRule
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import (
    excluded,
    gathered,
    in_window,
    newest_of,
    seconds_between,
    unpack_newest,
    where_true,
)
from spark.kinds.levels import LEVEL_COLUMNS, finish, level_columns


@dataclass(frozen=True)
class _Columns:
    """What plan_growth computes, built once per rule declaration (spark/column_cache.py)."""

    where: Column | None
    sample: dict[str, Column]  # _v and the level columns, per sample
    step: Column | None  # counter: the increase since the previous sample
    aggs: list[Column]
    carried: list[str]
    value: Column


def _columns(rule: GrowthRule, now: datetime) -> _Columns:
    table = rule.table_def
    key = table.key
    where = compile_expression(rule.where.tree, table, now) if rule.where is not None else None
    sample = {"_v": compile_expression(rule.value.tree, table, now).cast("double"), **level_columns(rule, now)}
    step = None
    if rule.counter:
        previous = F.lag("_v").over(Window.partitionBy(*key).orderBy("ts"))
        step = (F.when(previous.isNull(), F.lit(0.0)).when(F.col("_v") >= previous, F.col("_v") - previous)
                .otherwise(F.col("_v")))
        increase = F.sum("_step")
    else:
        increase = F.max_by("_v", "ts") - F.min_by("_v", "ts")
    carried = [c for c in (*rule.template_inputs(), *LEVEL_COLUMNS.values()) if c not in key]
    aggs = [increase.alias("_increase"), F.count("_v").alias("_n"), F.min("ts").alias("_first"),
            F.max("ts").alias("_last"), newest_of(carried)]
    span = seconds_between("_last", "_first")
    value = F.col("_increase") if rule.measure == "increase" else F.col("_increase") / span
    return _Columns(where, sample, step, aggs, carried, F.when((F.col("_n") >= 2) & (span > 0), value))


def plan_growth(rule: GrowthRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Reference: findings of `rule` over the table window `df`, in the normalised output shape."""
    columns = per_rule(rule, "growth", lambda: _columns(rule, now))
    rows = where_true(excluded(in_window(df, now - rule.over, now), rule), columns.where).withColumns(columns.sample)
    if columns.step is not None:
        rows = rows.withColumn("_step", columns.step)
    series = rows.groupBy(*rule.table_def.key).agg(*columns.aggs)
    series = unpack_newest(series, columns.carried).withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "_value": columns.value,
    })
    return finish(series, rule, rule.template_inputs())


def fold_growth(rule: GrowthRule, state: DataFrame | None, rows: DataFrame, now: datetime,
                stale_after: timedelta, partitions: int) -> DataFrame:
    """The rule's samples in `over` after adding `rows`: the rows passing `exclude` and `where`."""
    columns = per_rule(rule, "growth", lambda: _columns(rule, now))
    new = where_true(excluded(rows, rule), columns.where)
    return gathered(state, new, partitions).where(F.col("ts") >= F.lit(now - rule.over))


def judge_growth(rule: GrowthRule, state: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` from its kept samples: plan_growth over them."""
    return plan_growth(rule, state, now, stale_after)
