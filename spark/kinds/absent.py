"""The `absent` kind: `by` groups seen in the `over:` window whose newest sample is older than stale_after.

The alert's value is the seconds from the group's newest sample to `now`; it fires with the rule's
severity past stale_after, critical past critical_after. Absence is the finding: never no_data.

Kept state: the newest row of each `by` group among the rows passing `exclude` and `where` (its
last-seen time and template columns), dropped once it leaves `over`.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rules.kinds.absent import AbsentRule
from spark.expressions import compile_expression
from spark.kinds.common import (
    excluded,
    gathered,
    in_window,
    newest_of,
    newest_per_series,
    seconds_between,
    unpack_newest,
    where_true,
)
from spark.kinds.levels import duration_judge, emit


def _matching(rule: AbsentRule, df: DataFrame, now: datetime) -> DataFrame:
    """Rows passing the rule's `exclude` and `where`."""
    where = compile_expression(rule.where.tree, rule.table_def, now) if rule.where is not None else None
    return where_true(excluded(df, rule), where)


def plan_absent(rule: AbsentRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Reference: findings of `rule` over the table window `df`, in the normalised output shape."""
    rows = _matching(rule, in_window(df, now - rule.over, now), now)
    inputs = rule.template_inputs()
    carried = [c for c in inputs if c not in rule.group_by]
    groups = rows.groupBy(*rule.group_by).agg(F.max("ts").alias("_last"), newest_of(carried))
    groups = unpack_newest(groups, carried).withColumns({
        "_fresh": F.lit(True),
        "_value": seconds_between(F.lit(now), F.col("_last")),
    })
    # Strictly older than stale_after: a sample exactly stale_after old still counts as fresh elsewhere.
    silent = stale_after.total_seconds()
    critical = rule.critical_after.total_seconds() if rule.critical_after is not None else None

    def judge(value: Column) -> tuple[Column, Column]:
        severity, threshold = duration_judge(silent, critical, rule.severity)(value)
        return F.when(value > F.lit(silent), severity), F.when(value > F.lit(silent), threshold)

    return emit(groups, rule, inputs, judge=judge, judge_key=(silent, critical))


def fold_absent(rule: AbsentRule, state: DataFrame | None, rows: DataFrame, now: datetime,
                stale_after: timedelta, partitions: int) -> DataFrame:
    """Each group's newest matching row after adding `rows`; groups not seen in `over` are dropped."""
    new = _matching(rule, rows, now)
    return newest_per_series(gathered(state, new, partitions), rule.group_by).where(F.col("ts") >= F.lit(now - rule.over))


def judge_absent(rule: AbsentRule, state: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` from each group's newest matching row: plan_absent over them."""
    return plan_absent(rule, state, now, stale_after)
