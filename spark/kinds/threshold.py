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

from datetime import timedelta

from rules.kinds.threshold import ThresholdRule
from spark.expressions import compile_expression
from spark.kinds.common import fresh, in_lookback, newest_per_series, not_excluded, select, sub, true
from spark.kinds.levels import finish, level_columns


def plan_threshold(rule: ThresholdRule, source: str, stale_after: timedelta, one_row_per_series: bool = False) -> str:
    """Findings of `rule` over the rows of `source` (the table window, or each series' newest row
    when `one_row_per_series`), in the normalised output shape."""
    table = rule.table_def
    if one_row_per_series:
        newest = select(["*"], source, in_lookback(stale_after))
    else:
        newest = newest_per_series(source, table.key, in_lookback(stale_after))
    # exclude and where judge the newest sample of a series, as the fused plan does (spark/kinds/fused.py).
    where = compile_expression(rule.where.tree, table) if rule.where is not None else None
    computed = {
        "_fresh": fresh(stale_after),
        "_value": f"CAST({compile_expression(rule.value.tree, table)} AS DOUBLE)",
        **level_columns(rule),
    }
    rows = select(["*", *(f"{sql} AS `{column}`" for column, sql in computed.items())], sub(newest),
                  not_excluded(rule), true(where))
    return finish(sub(rows), rule, rule.template_inputs())
