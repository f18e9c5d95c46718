"""The `churn` kind: how often the set of `member` values of each `by` group changed within `over:`.

Per sample time (one collection cycle stamps all its rows with one ts) the members of a group
form a sorted set; the value is the number of samples whose set differs from the previous
sample's. A sample time at which a group has no matching row is skipped, not an empty set.
Levels are evaluated per row and the largest of the newest sample is used. The newest set is
the template value `members`. A group whose newest sample is older than stale_after is no_data.

Kept state: one row per group and sample time in `over` (its sorted member set, levels and
template columns, `churn_samples`); a cycle's rows of a group are summarised once, when folded.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from rules.kinds.churn import ChurnRule
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import excluded, gathered, in_window, newest_of, unpack_newest, where_true
from spark.kinds.levels import LEVEL_COLUMNS, emit, level_columns


@dataclass(frozen=True)
class _Columns:
    """What plan_churn computes, built once per rule declaration (spark/column_cache.py)."""

    where: Column | None
    levels: dict[str, Column]
    member: Column
    member_aggs: list[Column]
    sample_aggs: list[Column]
    changed: Column
    group_aggs: list[Column]
    carried: list[str]
    members: Column


def _columns(rule: ChurnRule, now: datetime) -> _Columns:
    table = rule.table_def
    by = rule.group_by
    where = compile_expression(rule.where.tree, table, now) if rule.where is not None else None
    others = [c for c in rule.template_inputs() if c not in by]
    levels = list(LEVEL_COLUMNS.values())
    carried_aggs = [*[F.max(c).alias(c) for c in levels], *[F.min(c).alias(c) for c in others]]
    previous = F.lag("_set").over(Window.partitionBy(*by).orderBy("ts"))
    carried = [*others, *levels, "_set"]
    return _Columns(
        where=where, levels=level_columns(rule, now), member=F.col(rule.member).cast("string").alias("_member"),
        member_aggs=carried_aggs, sample_aggs=[F.array_sort(F.collect_set("_member")).alias("_set"), *carried_aggs],
        changed=(previous.isNotNull() & (F.col("_set") != previous)).cast("int"),
        group_aggs=[F.sum("_changed").cast("double").alias("_value"), F.max("ts").alias("_last"), newest_of(carried)],
        carried=carried, members=F.array_join(F.col("_set"), ","),
    )


def churn_samples(rule: ChurnRule, rows: DataFrame, now: datetime) -> DataFrame:
    """One row per `by` group and sample time: its sorted member set (`_set`), levels and template columns."""
    by = rule.group_by
    columns = per_rule(rule, "churn", lambda: _columns(rule, now))
    rows = where_true(excluded(rows, rule), columns.where).withColumns(columns.levels)
    # Members repeat on every row they hold (one per queue): dropping the repeats in a plain hash
    # aggregate first leaves collect_set a set of clients per group, not of queues.
    members = rows.groupBy(*by, "ts", columns.member).agg(*columns.member_aggs)
    return members.groupBy(*by, "ts").agg(*columns.sample_aggs)


def judge_churn(rule: ChurnRule, samples: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Findings of `rule` from its groups' samples (churn_samples) within `over`."""
    by = rule.group_by
    columns = per_rule(rule, "churn", lambda: _columns(rule, now))
    per_sample = in_window(samples, now - rule.over, now).withColumn("_changed", columns.changed)
    groups = per_sample.groupBy(*by).agg(*columns.group_aggs)
    groups = unpack_newest(groups, columns.carried).withColumns({
        "_fresh": F.col("_last") >= F.lit(now - stale_after),
        "members": columns.members,
    })
    return emit(groups, rule, rule.template_inputs(), ("members",))


def plan_churn(rule: ChurnRule, df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """Reference: findings of `rule` over the table window `df`, in the normalised output shape."""
    return judge_churn(rule, churn_samples(rule, in_window(df, now - rule.over, now), now), now, stale_after)


def fold_churn(rule: ChurnRule, state: DataFrame | None, rows: DataFrame, now: datetime,
               stale_after: timedelta, partitions: int) -> DataFrame:
    """The groups' samples in `over` after summarising `rows` (whole collection cycles)."""
    new = churn_samples(rule, rows, now)
    return gathered(state, new, partitions).where(F.col("ts") >= F.lit(now - rule.over))
