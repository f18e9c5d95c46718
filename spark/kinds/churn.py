"""The `churn` plan: how often the set of `member` values of each `by` group changed within `over:`.

Per sample time (one collection cycle stamps all its rows with one ts) the members of a group
form a sorted set; the value is the number of samples whose set differs from the previous
sample's. A sample time at which a group has no matching row is skipped, not an empty set.
Levels are evaluated per row and the largest of the newest sample is used. The newest set is
the template value `members`. A group whose newest sample is older than stale_after is no_data.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.churn import ChurnRule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_window, newest_of, unpack_newest, where_true
from spark.kinds.levels import LEVEL_COLUMNS, emit, level_columns


def plan_churn(rule: ChurnRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape."""
    table = rule.table_def
    by = rule.group_by
    where = compile_expression(rule.where.tree, table, now) if rule.where is not None else None
    rows = where_true(excluded(in_window(df, now - rule.over, now), rule), where)
    rows = rows.withColumns(level_columns(rule, now))
    inputs = rule.template_inputs()
    others = [c for c in inputs if c not in by]
    levels = list(LEVEL_COLUMNS.values())
    # Members repeat on every row they hold (one per queue): dropping the repeats in a plain hash
    # aggregate first leaves collect_set a set of clients per group, not of queues.
    members = rows.groupBy(*by, "ts", F.col(rule.member).cast("string").alias("_member")).agg(
        *[F.max(c).alias(c) for c in levels],
        *[F.first(c).alias(c) for c in others],
    )
    per_sample = members.groupBy(*by, "ts").agg(
        F.array_sort(F.collect_set("_member")).alias("_set"),
        *[F.max(c).alias(c) for c in levels],
        *[F.first(c).alias(c) for c in others],
    )
    previous = F.lag("_set").over(Window.partitionBy(*by).orderBy("ts"))
    per_sample = per_sample.withColumn("_changed", (previous.isNotNull() & (F.col("_set") != previous)).cast("int"))
    carried = [*others, *levels, "_set"]
    groups = per_sample.groupBy(*by).agg(
        F.sum("_changed").cast("double").alias("_value"), F.max("ts").alias("_last"), newest_of(carried),
    )
    groups = unpack_newest(groups, carried).withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "members": F.array_join(F.col("_set"), ","),
    })
    return emit(groups, rule, inputs, ("members",))
