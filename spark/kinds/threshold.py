"""The `threshold` plan: newest sample per series, filtered, valued, compared with its levels.

Semantics (what an operator can rely on):
- Each series (one value of the table key) contributes its newest sample in the lookback window.
  If that sample is older than `stale_after`, the series is stale.
- `where` is applied to the newest sample, stale or not: a series whose last sample was not one
  the rule watches (e.g. an empty cache) gives nothing, not no_data.
- Levels are strict: `above` fires when value > level, `below` when value < level. Severity is
  the highest level crossed; `threshold` is that level's value.
- When `by` is coarser than the key, the fresh series of each `by` group are reduced (`reduce:`,
  max by default) and the levels are reduced to the least sensitive one in the group (max for
  `above`, min for `below`), so a group alert never fires on a level no member has. Template
  columns outside `by` come from the series with the largest value (smallest for below-only rules).
  A group is no_data only when all its series are stale.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rules.expressions import Expression
from rules.kinds.threshold import Levels, ThresholdRule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_lookback, label_map, newest_per_series, string_map

_LEVEL_COLUMNS = {("above", "critical"): "_ac", ("above", "warning"): "_aw",
                  ("below", "critical"): "_bc", ("below", "warning"): "_bw"}
_REDUCERS = {"max": F.max, "min": F.min, "sum": F.sum, "avg": F.avg}


def _level(levels: Levels | None, name: str, rule: ThresholdRule, now: datetime) -> Column:
    expr: Expression | None = getattr(levels, name) if levels is not None else None
    if expr is None:
        return F.lit(None).cast("double")
    return compile_expression(expr.tree, rule.table_def, now).cast("double")


def _severity_columns(value: Column) -> tuple[Column, Column]:
    """(severity, threshold) from `value` and the level columns _ac/_aw/_bc/_bw."""
    # A null level or value crosses nothing; strict comparisons, as the RocketMQ client's own checks.
    crossed = {
        col: F.coalesce(value > F.col(col) if side == "above" else value < F.col(col), F.lit(False))
        for (side, _), col in _LEVEL_COLUMNS.items()
    }
    severity = (
        F.when(crossed["_ac"] | crossed["_bc"], F.lit("critical"))
        .when(crossed["_aw"] | crossed["_bw"], F.lit("warning"))
    )
    threshold = (
        F.when(crossed["_ac"], F.col("_ac")).when(crossed["_bc"], F.col("_bc"))
        .when(crossed["_aw"], F.col("_aw")).when(crossed["_bw"], F.col("_bw"))
    )
    return severity, threshold


def _reduced(rows: DataFrame, rule: ThresholdRule, inputs: tuple[str, ...]) -> DataFrame:
    """One row per `by` group: reduced value and levels over its fresh series."""
    fresh = F.col("_fresh")
    value = F.when(fresh, F.col("_value"))
    if rule.reduce == "count":
        reduced = F.count(value).cast("double")
    elif rule.reduce == "count_distinct":
        reduced = F.count_distinct(value).cast("double")
    else:
        reduced = _REDUCERS[rule.reduce](value).cast("double")
    others = [c for c in inputs if c not in rule.group_by]
    pick = F.min_by if rule.above is None else F.max_by
    aggs = [
        reduced.alias("_value"),
        F.max(fresh.cast("int")).alias("_has_fresh"),
        F.max(F.when(fresh, F.col("_ac"))).alias("_ac"),
        F.max(F.when(fresh, F.col("_aw"))).alias("_aw"),
        F.min(F.when(fresh, F.col("_bc"))).alias("_bc"),
        F.min(F.when(fresh, F.col("_bw"))).alias("_bw"),
    ]
    if others:
        aggs.append(pick(F.struct(*others), value).alias("_worst"))
    grouped = rows.groupBy(*rule.group_by).agg(*aggs)
    return grouped.withColumns(
        {"_fresh": F.col("_has_fresh") == 1, **{name: F.col("_worst")[name] for name in others}}
    )


def plan_threshold(rule: ThresholdRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape."""
    table = rule.table_def
    rows = newest_per_series(excluded(in_lookback(df, now, stale_after), rule), table.key)
    if rule.where is not None:
        rows = rows.where(F.coalesce(compile_expression(rule.where.tree, table, now), F.lit(False)))
    # One withColumns, not one withColumn each: every call is an analysis round trip to the JVM,
    # and building the plan cost as much as running it on a small store.
    computed = {
        "_fresh": F.col("ts") >= F.lit(now - stale_after),
        "_value": compile_expression(rule.value.tree, table, now).cast("double"),
    }
    for (side, name), col in _LEVEL_COLUMNS.items():
        computed[col] = _level(getattr(rule, side), name, rule, now)
    rows = rows.withColumns(computed)
    inputs = rule.template_inputs()
    if rule.reduces:
        rows = _reduced(rows, rule, inputs)
    severity, threshold = _severity_columns(F.col("_value"))
    fresh = F.col("_fresh")
    return rows.where(~fresh | severity.isNotNull()).select(
        F.lit(rule.alert).alias("rule"),
        label_map(rule).alias("labels"),
        F.when(fresh, severity).alias("severity"),
        F.when(fresh, F.col("_value")).alias("value"),
        F.when(fresh, threshold).alias("threshold"),
        (~fresh).alias("no_data"),
        string_map([(name, F.col(name)) for name in inputs]).alias("inputs"),
    )
