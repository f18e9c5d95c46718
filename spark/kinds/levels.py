"""Warning/critical levels shared by the kinds that have them: compute, reduce, compare, emit.

A kind's plan builds one row per series with `_value`, `_fresh` (newest sample within
stale_after) and the level columns (`level_columns`), then calls `finish`, which reduces to the
rule's `by` when it is coarser than the series key and emits the normalised output rows.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from datetime import datetime

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rules.expressions import Expression
from rules.kinds.base import RuleBase
from rules.kinds.threshold import Levels
from spark.column_cache import per_rule
from spark.expressions import compile_expression
from spark.kinds.common import label_map, string_map

LEVEL_COLUMNS = {("above", "critical"): "_ac", ("above", "warning"): "_aw",
                 ("below", "critical"): "_bc", ("below", "warning"): "_bw"}
_REDUCERS = {"max": F.max, "min": F.min, "sum": F.sum, "avg": F.avg}


def _level(levels: Levels | None, name: str, rule: RuleBase, now: datetime) -> Column:
    expr: Expression | None = getattr(levels, name) if levels is not None else None
    if expr is None:
        return F.lit(None).cast("double")
    return compile_expression(expr.tree, rule.table_def, now).cast("double")


def level_columns(rule: RuleBase, now: datetime) -> dict[str, Column]:
    """The four level columns (_ac, _aw, _bc, _bw) of a rule with `above`/`below`; null where absent."""
    return dict(per_rule(rule, "levels", lambda: {
        col: _level(getattr(rule, side, None), name, rule, now) for (side, name), col in LEVEL_COLUMNS.items()
    }))


def severity_columns(value: Column) -> tuple[Column, Column]:
    """(severity, threshold) from `value` and the level columns _ac/_aw/_bc/_bw."""
    # A null level or value crosses nothing; strict comparisons, as the RocketMQ client's own checks.
    crossed = {
        col: F.coalesce(value > F.col(col) if side == "above" else value < F.col(col), F.lit(False))
        for (side, _), col in LEVEL_COLUMNS.items()
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


def reduce_value(rule: RuleBase, value: Column) -> Column:
    """The aggregate of `value` that the rule's `reduce:` names, as a double."""
    if rule.reduce == "count":
        return F.count(value).cast("double")
    if rule.reduce == "count_distinct":
        return F.count_distinct(value).cast("double")
    return _REDUCERS[rule.reduce](value).cast("double")


def reduce_groups(rows: DataFrame, rule: RuleBase, keys: tuple[str, ...], inputs: tuple[str, ...],
                  extra: tuple[str, ...] = ()) -> DataFrame:
    """One row per `keys` group: reduced value and levels over its fresh series.

    Levels reduce to the least sensitive one in the group (max for above, min for below), so a
    group alert never fires on a level no member has. Input columns outside `keys` (and `extra`
    columns) come from the series with the largest value (smallest for below-only rules). A
    group is fresh when any of its series is.
    """
    others = [c for c in (*inputs, *extra) if c not in keys]
    aggs, unpacked = per_rule(rule, ("reduce", keys, inputs, extra), lambda: _reduce_columns(rule, others))
    grouped = rows.groupBy(*keys).agg(*aggs)
    return grouped.withColumns(unpacked).drop("_has_fresh", "_worst")


def _reduce_columns(rule: RuleBase, others: list[str]) -> tuple[list[Column], dict[str, Column]]:
    """reduce_groups' aggregates and the columns that unpack them."""
    fresh = F.col("_fresh")
    value = F.when(fresh, F.col("_value"))
    pick = F.min_by if getattr(rule, "above", None) is None else F.max_by
    aggs = [
        reduce_value(rule, value).alias("_value"),
        F.max(fresh.cast("int")).alias("_has_fresh"),
        F.max(F.when(fresh, F.col("_ac"))).alias("_ac"),
        F.max(F.when(fresh, F.col("_aw"))).alias("_aw"),
        F.min(F.when(fresh, F.col("_bc"))).alias("_bc"),
        F.min(F.when(fresh, F.col("_bw"))).alias("_bw"),
    ]
    if others:
        aggs.append(pick(F.struct(*others), value).alias("_worst"))
    return aggs, {"_fresh": F.col("_has_fresh") == 1, **{name: F.col("_worst")[name] for name in others}}


def finish(rows: DataFrame, rule: RuleBase, inputs: tuple[str, ...],
           extra: tuple[str, ...] = (), judge: Judge | None = None) -> DataFrame:
    """Output rows: reduce to `by` if coarser than the series, compare with the levels, stale -> no_data.

    `extra` names columns of template values the kind computed (e.g. members), added to the inputs;
    `judge` replaces the level comparison for kinds whose levels are fixed durations.
    """
    if rule.reduces:
        rows = reduce_groups(rows, rule, rule.group_by, inputs, extra)
    return emit(rows, rule, inputs, extra, judge)


# (value column) -> (severity column, threshold column); severity null means "not firing".
Judge = Callable[[Column], tuple[Column, Column]]


def duration_judge(warning_s: float, critical_s: float | None, severity: str) -> Judge:
    """Severity `severity` when value >= warning_s, critical when value >= critical_s (durations in seconds)."""

    def judge(value: Column) -> tuple[Column, Column]:
        sev = F.when(value >= F.lit(warning_s), F.lit(severity))
        thr = F.when(value >= F.lit(warning_s), F.lit(float(warning_s)))
        if critical_s is not None:
            sev = F.when(value >= F.lit(critical_s), F.lit("critical")).otherwise(sev)
            thr = F.when(value >= F.lit(critical_s), F.lit(float(critical_s))).otherwise(thr)
        return sev, thr

    return judge


def emit(rows: DataFrame, rule: RuleBase, inputs: tuple[str, ...], extra: tuple[str, ...] = (),
         judge: Judge | None = None, judge_key: Hashable = None) -> DataFrame:
    """Compare `_value` with the levels (or `judge`) and select the normalised output shape.

    The output Columns are kept with the rule's declaration (spark/column_cache.py), so `judge` must
    follow from the declaration and `judge_key`, which names anything else it depends on.
    """
    keep, columns = per_rule(rule, ("emit", inputs, extra, judge_key),
                             lambda: _emit_columns(rule, inputs, extra, judge))
    return rows.where(keep).select(*columns)


def _emit_columns(rule: RuleBase, inputs: tuple[str, ...], extra: tuple[str, ...],
                  judge: Judge | None) -> tuple[Column, list[Column]]:
    """emit's row condition and output columns."""
    severity, threshold = (judge or severity_columns)(F.col("_value"))
    fresh = F.col("_fresh")
    pairs = [(name, F.col(name)) for name in (*inputs, *extra)]
    return ~fresh | severity.isNotNull(), [
        F.lit(rule.alert).alias("rule"),
        label_map(rule).alias("labels"),
        F.when(fresh, severity).alias("severity"),
        F.when(fresh, F.col("_value")).alias("value"),
        F.when(fresh, threshold).alias("threshold"),
        (~fresh).alias("no_data"),
        string_map(pairs).alias("inputs"),
    ]
