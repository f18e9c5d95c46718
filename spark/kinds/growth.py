"""The `growth` kind: increase (or rate) of a value per series over the rule's `over:` window.

Semantics:
- Samples are the rows of the series in [now - over, now] matching `where`.
- counter (default): increase = sum over consecutive samples of (v - previous v), where a drop
  counts as a reset, so its contribution is v itself (Prometheus' increase(), unextrapolated).
  gauge (`counter: false`): increase = newest - oldest value of the window.
- rate = increase / seconds between the oldest and newest sample of the window.
- A series needs two samples to have a growth; one with a single fresh sample gives nothing.
- Levels are evaluated on the newest sample; a series whose newest sample is older than
  stale_after is no_data. `by` coarser than the key reduces the series' growths (`reduce:`).

Kept state: per series, the rule's own samples in `over` (rows passing `where`, the columns the
rule reads), one per cycle. A growth rule watches few series (DLQ and retry queues, master
brokers), and the increase needs every step inside the window, so the samples themselves are the
smallest exact state.
"""

from __future__ import annotations

from datetime import timedelta

from rules.kinds.growth import GrowthRule
from spark.expressions import compile_expression
from spark.kinds.common import (
    Part,
    columns_read,
    fresh,
    in_window,
    newest_of,
    sample_conditions,
    seconds_between,
    select,
    sql_type,
    sub,
    unpack,
)
from spark.kinds.levels import finish, level_columns
from spark.sql import ago, name, names, struct


def plan_growth(rule: GrowthRule, source: str, stale_after: timedelta) -> str:
    """Reference: findings of `rule` over the table window `source`, in the normalised output shape."""
    key = rule.table_def.key
    sample = {"_v": f"CAST({compile_expression(rule.value.tree, rule.table_def)} AS DOUBLE)", **level_columns(rule)}
    rows = select(["*", *(f"{sql} AS {name(column)}" for column, sql in sample.items())], source,
                  in_window(rule.over), *sample_conditions(rule))
    if rule.counter:
        previous = f"lag(`_v`) OVER (PARTITION BY {names(key)} ORDER BY `ts`)"
        rows = select(["*", f"{previous} AS `_previous`"], sub(rows))
        step = ("CASE WHEN `_previous` IS NULL THEN 0.0D WHEN `_v` >= `_previous` THEN `_v` - `_previous` "
                "ELSE `_v` END")
        rows = select(["*", f"{step} AS `_step`"], sub(rows))
        increase = "sum(`_step`)"
    else:
        increase = "max_by(`_v`, `ts`) - min_by(`_v`, `ts`)"
    carried = [c for c in (*rule.template_inputs(), *level_columns(rule)) if c not in key]
    series = select([names(key), f"{increase} AS `_increase`", "count(`_v`) AS `_n`", "min(`ts`) AS `_first`",
                     "max(`ts`) AS `_last`", newest_of(carried)], sub(rows), group_by=key)
    span = seconds_between("`_last`", "`_first`")
    value = "`_increase`" if rule.measure == "increase" else f"`_increase` / {span}"
    series = select([
        "* EXCEPT (`_newest`)", *unpack(carried),
        f"{fresh(stale_after, '_last')} AS `_fresh`",
        f"CASE WHEN `_n` >= 2 AND {span} > 0 THEN {value} END AS `_value`",
    ], sub(series))
    return finish(sub(series), rule, rule.template_inputs())


def part_growth(rule: GrowthRule, prefix: str, stale_after: timedelta) -> Part:
    """The rule's samples in `over` in a frame of the table's series: an array (`prefix`_samples) of
    the columns the rule reads, one element per matching row."""
    table = rule.table_def
    columns = [c for c in columns_read(rule) if c not in table.key and c != "ts"]
    samples = f"ARRAY<STRUCT<{', '.join(f'{name(c)}: {sql_type(table, c)}' for c in ['ts', *columns])}>>"
    ok, kept, new = name(prefix + "_ok"), name(prefix + "_samples"), name(prefix + "_new")
    return Part(
        key=table.key,
        types={prefix + "_samples": samples},
        rows={prefix + "_ok": " AND ".join(sample_conditions(rule))},
        new={prefix + "_new": f"array_sort(collect_list(CASE WHEN {ok} THEN {struct({c: name(c) for c in ['ts', *columns]})} END))"},
        fold={prefix + "_samples": f"filter(concat(coalesce(s.{kept}, CAST(array() AS {samples})), "
                                   f"coalesce(n.{new}, CAST(array() AS {samples}))), e -> e.ts >= {ago(rule.over)})"},
        alive=f"size({kept}) > 0",
        view=lambda frame: sub(select([names(table.key), f"inline({kept})"], frame, f"size({kept}) > 0")),
    )


def judge_growth(rule: GrowthRule, state: str, stale_after: timedelta) -> str:
    """Findings of `rule` from its kept samples: plan_growth over them."""
    return plan_growth(rule, state, stale_after)
