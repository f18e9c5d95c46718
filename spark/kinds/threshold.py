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

From kept state every threshold rule of one table is judged in one pass over its series' newest
rows (judge_threshold): Spark optimises each branch of a union on its own, so N rules judged
apart meant N scans of the table's frame. Each rule becomes a nullable struct per series, one
generator turns them into rows, and one aggregate reduces them to the rules' alerts (a rule whose
`by` is the series key has one row per alert). The findings are plan_threshold's (the reference
path's), which the differential tests check.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import timedelta

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
    true,
)
from spark.kinds.levels import LEVEL_COLUMNS, finish, level_columns, severity_columns
from spark.sql import literal, name, names, string_map, struct


def plan_threshold(rule: ThresholdRule, source: str, stale_after: timedelta) -> str:
    """Reference: findings of `rule` over the table window `source`, in the normalised output shape."""
    table = rule.table_def
    newest = newest_per_series(source, table.key, in_lookback(stale_after))
    # exclude and where judge the newest sample of a series, as judge_threshold does.
    where = compile_expression(rule.where.tree, table) if rule.where is not None else None
    computed = {
        "_fresh": fresh(stale_after),
        "_value": f"CAST({compile_expression(rule.value.tree, table)} AS DOUBLE)",
        **level_columns(rule),
    }
    rows = select(["*", *(f"{sql} AS `{column}`" for column, sql in computed.items())], sub(newest),
                  not_excluded(rule), true(where))
    return finish(sub(rows), rule, rule.template_inputs())


def judge_threshold(rules: Sequence[ThresholdRule], newest: str, stale_after: timedelta) -> str:
    """Findings of every rule in `rules` (all on one table, one stale_after) from each series'
    newest row (`newest`, the kept frame's), in one pass: the same as plan_threshold's."""
    table = rules[0].table_def
    values = ["*", f"{fresh(stale_after)} AS `_fresh`"]
    outputs = []
    for i, rule in enumerate(rules):
        levels = level_columns(rule)
        values.append(f"CAST({compile_expression(rule.value.tree, table)} AS DOUBLE) AS `_v{i}`")
        values += [f"{sql} AS {name(column + str(i))}" for column, sql in levels.items()]
        outputs.append(_series_output(rule, i, tuple(levels)))
    rows = select(values, sub(select(["*"], newest, in_lookback(stale_after))))
    exploded = select([f"inline(filter(array({', '.join(outputs)}), x -> x IS NOT NULL))"], sub(rows))
    value = "CASE WHEN `_fresh` THEN `_value` END"
    reduced = {reduce: f"CAST({reduce.replace('_distinct', '')}({'DISTINCT ' if reduce == 'count_distinct' else ''}`v`)"
                       f" AS DOUBLE)" for reduce in sorted({"max", *(r.reduce for r in rules if r.reduces)})}
    groups = select([
        "`rule`", "first(`labels`) AS `labels`",
        f"CASE first(`reduce`) {' '.join(f'WHEN {literal(k)} THEN {v}' for k, v in reduced.items())} END AS `_value`",
        "max(CAST(`fresh` AS INT)) = 1 AS `_fresh`",
        *(f"{'max' if c.startswith('_a') else 'min'}(`{c[1:]}`) AS `{c}`" for c in LEVEL_COLUMNS.values()),
        "map_concat(first(`by_inputs`), coalesce(CASE first(`pick`) WHEN 'max' THEN max_by(`others`, `o`) "
        "ELSE min_by(`others`, `o`) END, first(`no_others`))) AS `inputs`",
    ], sub(exploded), group_by=["rule", "g"])
    severity, threshold = severity_columns("`_value`", tuple(LEVEL_COLUMNS.values()))
    judged = select(["*", f"{severity} AS `_severity`", f"{threshold} AS `_threshold`"], sub(groups))
    return select([names(OUTPUT_COLUMNS)], sub(select([
        "`rule`", "`labels`", "CASE WHEN `_fresh` THEN `_severity` END AS `severity`", f"{value} AS `value`",
        "CASE WHEN `_fresh` THEN `_threshold` END AS `threshold`", "NOT `_fresh` AS `no_data`", "`inputs`",
    ], sub(judged), "(NOT `_fresh` OR `_severity` IS NOT NULL)")))


def _series_output(rule: ThresholdRule, i: int, levels: tuple[str, ...]) -> str:
    """The i-th rule's struct for one series: null when it is excluded or fails `where`, and, for a rule
    judging each series alone, when the series neither crosses a level nor is stale."""
    keep = [not_excluded(rule)]
    if rule.where is not None:
        keep.append(f"coalesce({compile_expression(rule.where.tree, rule.table_def)}, FALSE)")
    if not rule.reduces:
        severity, _ = severity_columns(f"`_v{i}`", levels, str(i))
        keep.append(f"(NOT `_fresh` OR {severity} IS NOT NULL)")
    others = [c for c in rule.template_inputs() if c not in rule.group_by]
    fresh_value = f"CASE WHEN `_fresh` THEN `_v{i}` END"
    output = struct({
        "rule": literal(rule.alert),
        "g": f"array({', '.join(f'CAST({name(c)} AS STRING)' for c in rule.group_by)})",
        "labels": label_map(rule),
        "reduce": literal(rule.reduce if rule.reduces else "max"),
        "pick": literal("min" if rule.above is None else "max"),
        "fresh": "`_fresh`",
        "v": fresh_value,
        # Template columns outside `by` come from the group's worst fresh series (the series itself
        # when the rule judges each series alone).
        "o": fresh_value if rule.reduces else "0.0D",
        **{c[1:]: (f"CASE WHEN `_fresh` THEN {name(c + str(i))} END" if c in levels else "CAST(NULL AS DOUBLE)")
           for c in LEVEL_COLUMNS.values()},
        "by_inputs": inputs_map(rule, rule.group_by),
        "others": inputs_map(rule, others),
        "no_others": string_map((c, "CAST(NULL AS STRING)") for c in others),
    })
    return f"CASE WHEN {' AND '.join(k for k in keep if k != 'TRUE') or 'TRUE'} THEN {output} END"
