"""The `growth` plan: increase (or rate) of a value per series over the rule's `over:` window.

Semantics:
- Samples are the rows of the series in [now - over, now] matching `where`.
- counter (default): increase = sum over consecutive samples of (v - previous v), where a drop
  counts as a reset, so its contribution is v itself (Prometheus' increase(), unextrapolated).
  gauge (`counter: false`): increase = newest - oldest value of the window.
- rate = increase / seconds between the oldest and newest sample of the window.
- A series needs two samples to have a growth; one with a single fresh sample gives nothing.
- Levels are evaluated on the newest sample; a series whose newest sample is older than
  stale_after is no_data. `by` coarser than the key reduces the series' growths (`reduce:`).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.growth import GrowthRule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_window, newest_of, seconds_between, unpack_newest, where_true
from spark.kinds.levels import LEVEL_COLUMNS, finish, level_columns


def plan_growth(rule: GrowthRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape."""
    table = rule.table_def
    key = table.key
    where = compile_expression(rule.where.tree, table, now) if rule.where is not None else None
    rows = where_true(excluded(in_window(df, now - rule.over, now), rule), where)
    rows = rows.withColumns({"_v": compile_expression(rule.value.tree, table, now).cast("double"),
                             **level_columns(rule, now)})
    if rule.counter:
        previous = F.lag("_v").over(Window.partitionBy(*key).orderBy("ts"))
        step = F.when(previous.isNull(), F.lit(0.0)).when(F.col("_v") >= previous, F.col("_v") - previous)
        rows = rows.withColumn("_step", step.otherwise(F.col("_v")))
        increase = F.sum("_step")
    else:
        increase = F.max_by("_v", "ts") - F.min_by("_v", "ts")
    inputs = rule.template_inputs()
    carried = [c for c in (*inputs, *LEVEL_COLUMNS.values()) if c not in key]
    series = rows.groupBy(*key).agg(
        increase.alias("_increase"), F.count("_v").alias("_n"), F.min("ts").alias("_first"),
        F.max("ts").alias("_last"), newest_of(carried),
    )
    span = seconds_between(F.col("_last"), F.col("_first"))
    value = F.col("_increase") if rule.measure == "increase" else F.col("_increase") / span
    series = unpack_newest(series, carried).withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "_value": F.when((F.col("_n") >= 2) & (span > 0), value),
    })
    return finish(series, rule, inputs)
