"""Threshold rules of one table evaluated together: one scan, one shuffle, every rule a struct.

Spark optimises each branch of a union on its own, so N threshold rules on one table meant N
scans and N shuffles (column pruning makes every branch's scan different, so no exchange is
reused). Rules that need only the newest row of each series and no reduction are fused here:
the newest rows are computed once, each rule becomes a nullable struct in the output shape,
and one explode turns them back into rows. Results are identical to plan_threshold's (a test
evaluates the same rules both ways).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from rules.kinds.base import RuleBase
from rules.kinds.threshold import ThresholdRule
from spark.column_cache import cached, per_rule, rule_key
from spark.expressions import compile_expression
from spark.kinds.common import OUTPUT_COLUMNS, in_lookback, label_map, newest_per_series, string_map
from spark.kinds.levels import LEVEL_COLUMNS, level_columns


def fusable(rule: RuleBase) -> bool:
    """True for rules plan_fused computes exactly: threshold rules without reduction."""
    return isinstance(rule, ThresholdRule) and not rule.reduces


def _not_excluded(rule: RuleBase) -> Column:
    keep = F.lit(True)
    for name, pattern in rule.exclude.items():
        keep = keep & ~F.coalesce(F.col(name).cast("string").rlike(f"^(?:{pattern})$"), F.lit(False))
    return keep


def plan_fused(rules: Sequence[ThresholdRule], df: DataFrame, now: datetime, stale_after: timedelta) -> DataFrame:
    """The output rows of every rule in `rules` (all on df's table, one stale_after) from one pass."""
    table = rules[0].table_def
    rows = newest_per_series(in_lookback(df, now, stale_after), table.key)
    computed: dict[str, Column] = {"_fresh": F.col("ts") >= F.lit(now - stale_after)}
    structs = []
    for i, rule in enumerate(rules):
        columns, struct = per_rule(rule, ("fused", i), lambda: _rule_columns(rule, i, now))  # noqa: B023
        computed.update(columns)
        structs.append(struct)
    keys = tuple(rule_key(rule) for rule in rules)
    # A rule calling now() has new structs every cycle, so their array is built again too.
    outputs = (F.explode(F.array(*structs)).alias("_out") if None in keys
               else cached(("fused-outputs", keys), lambda: F.explode(F.array(*structs)).alias("_out")))
    exploded = rows.withColumns(computed).select(outputs)
    found, shape = cached(("fused-shape",), lambda: (F.col("_out").isNotNull(),
                                                     [F.col("_out")[c].alias(c) for c in OUTPUT_COLUMNS]))
    return exploded.where(found).select(*shape)


def _rule_columns(rule: ThresholdRule, i: int, now: datetime) -> tuple[dict[str, Column], Column]:
    """The i-th rule's value and level columns (suffixed with i), and its output struct: null when
    its series neither crosses a level nor is stale, or is excluded."""
    table = rule.table_def
    computed = {f"_v{i}": compile_expression(rule.value.tree, table, now).cast("double")}
    computed.update({f"{col}{i}": level for col, level in level_columns(rule, now).items()})
    fresh = F.col("_fresh")
    value = F.col(f"_v{i}")
    crossed = {
        col: F.coalesce(value > F.col(f"{col}{i}") if side == "above" else value < F.col(f"{col}{i}"), F.lit(False))
        for (side, _), col in LEVEL_COLUMNS.items()
    }
    severity = (F.when(crossed["_ac"] | crossed["_bc"], F.lit("critical"))
                .when(crossed["_aw"] | crossed["_bw"], F.lit("warning")))
    threshold = F.lit(None).cast("double")
    for col in ("_bw", "_aw", "_bc", "_ac"):  # last written wins: critical above first, as severity
        threshold = F.when(crossed[col], F.col(f"{col}{i}")).otherwise(threshold)
    keep = _not_excluded(rule) & (~fresh | severity.isNotNull())
    if rule.where is not None:
        keep = keep & F.coalesce(compile_expression(rule.where.tree, table, now), F.lit(False))
    output = F.struct(
        F.lit(rule.alert).alias("rule"), label_map(rule).alias("labels"),
        F.when(fresh, severity).alias("severity"), F.when(fresh, value).alias("value"),
        F.when(fresh, threshold).alias("threshold"), (~fresh).alias("no_data"),
        string_map([(name, F.col(name)) for name in rule.template_inputs()]).alias("inputs"),
    )
    return computed, F.when(keep, output)
