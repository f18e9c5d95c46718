"""Threshold rules of one table evaluated together: one pass over its newest rows, every rule a struct.

Spark optimises each branch of a union on its own, so N threshold rules on one table meant N
scans (and, over a window, N rankings of its rows). Rules that need only the newest row of each
series and no reduction are fused here: the newest rows are read once, each rule becomes a
nullable struct in the output shape, and one generator turns them back into rows. Results are
identical to plan_threshold's (a test evaluates the same rules both ways).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

from rules.kinds.base import RuleBase
from rules.kinds.threshold import ThresholdRule
from spark.expressions import compile_expression
from spark.kinds.common import (
    OUTPUT_COLUMNS,
    fresh,
    in_lookback,
    inputs_map,
    label_map,
    newest_per_series,
    not_excluded,
    select,
    sub,
)
from spark.kinds.levels import level_columns, severity_columns
from spark.sql import literal, name, names, struct


def fusable(rule: RuleBase) -> bool:
    """True for rules plan_fused computes exactly: threshold rules without reduction."""
    return isinstance(rule, ThresholdRule) and not rule.reduces


def plan_fused(rules: Sequence[ThresholdRule], source: str, stale_after: timedelta,
               one_row_per_series: bool = False) -> str:
    """The output rows of every rule in `rules` (all on one table, one stale_after) from one pass."""
    table = rules[0].table_def
    if one_row_per_series:
        newest = select(["*"], source, in_lookback(stale_after))
    else:
        newest = newest_per_series(source, table.key, in_lookback(stale_after))
    values = ["*", f"{fresh(stale_after)} AS `_fresh`"]
    judged = ["*"]
    outputs = []
    for i, rule in enumerate(rules):
        value, levels = f"_v{i}", level_columns(rule)
        values.append(f"CAST({compile_expression(rule.value.tree, table)} AS DOUBLE) AS {name(value)}")
        values += [f"{sql} AS {name(column + str(i))}" for column, sql in levels.items()]
        severity, threshold = severity_columns(name(value), tuple(levels), str(i))
        judged += [f"{severity} AS `_s{i}`", f"{threshold} AS `_t{i}`"]
        outputs.append(_output(rule, i))
    rows = select(judged, sub(select(values, sub(newest))))
    exploded = select([f"inline(filter(array({', '.join(outputs)}), x -> x IS NOT NULL))"], sub(rows))
    return select([names(OUTPUT_COLUMNS)], sub(exploded))


def _output(rule: ThresholdRule, i: int) -> str:
    """The i-th rule's output struct: null when its series neither crosses a level nor is stale, or is excluded."""
    keep = [f"(NOT `_fresh` OR `_s{i}` IS NOT NULL)"]
    if rule.exclude:
        keep.append(not_excluded(rule))
    if rule.where is not None:
        keep.append(f"coalesce({compile_expression(rule.where.tree, rule.table_def)}, FALSE)")
    output = struct({
        "rule": literal(rule.alert),
        "labels": label_map(rule),
        "severity": f"CASE WHEN `_fresh` THEN `_s{i}` END",
        "value": f"CASE WHEN `_fresh` THEN `_v{i}` END",
        "threshold": f"CASE WHEN `_fresh` THEN `_t{i}` END",
        "no_data": "NOT `_fresh`",
        "inputs": inputs_map(rule, rule.template_inputs()),
    })
    return f"CASE WHEN {' AND '.join(keep)} THEN {output} END"
