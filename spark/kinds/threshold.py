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

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from rules.kinds.threshold import ThresholdRule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, in_lookback, newest_per_series
from spark.kinds.levels import finish, level_columns


def plan_threshold(rule: ThresholdRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` over the table window `df`, in the normalised output shape."""
    table = rule.table_def
    # exclude judges the newest sample of a series, as the fused plan does (spark/kinds/fused.py).
    rows = excluded(newest_per_series(in_lookback(df, now, stale_after), table.key), rule)
    if rule.where is not None:
        rows = rows.where(F.coalesce(compile_expression(rule.where.tree, table, now), F.lit(False)))
    # One withColumns, not one withColumn each: every call is an analysis round trip to the JVM,
    # and building the plan cost as much as running it on a small store.
    computed = {
        "_fresh": F.col("ts") >= F.lit(now - stale_after),
        "_value": compile_expression(rule.value.tree, table, now).cast("double"),
        **level_columns(rule, now),
    }
    return finish(rows.withColumns(computed), rule, rule.template_inputs())
