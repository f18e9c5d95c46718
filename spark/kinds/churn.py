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

from datetime import timedelta

from rules.kinds.churn import ChurnRule
from spark.expressions import compile_expression
from spark.kinds.common import fresh, in_window, newest_of, not_excluded, select, sub, true, unpack
from spark.kinds.levels import emit, level_columns
from spark.sql import ago, name, names


def _others(rule: ChurnRule) -> list[str]:
    return [c for c in rule.template_inputs() if c not in rule.group_by]


def churn_samples(rule: ChurnRule, rows: str) -> str:
    """One row per `by` group and sample time: its sorted member set (`_set`), levels and template columns."""
    by = rule.group_by
    where = compile_expression(rule.where.tree, rule.table_def) if rule.where is not None else None
    levels = list(level_columns(rule))
    others = _others(rule)
    computed = {**level_columns(rule), "_member": f"CAST({name(rule.member)} AS STRING)"}
    matching = select(["*", *(f"{sql} AS {name(column)}" for column, sql in computed.items())], rows,
                      not_excluded(rule), true(where))
    carried = [*(f"max({name(c)}) AS {name(c)}" for c in levels), *(f"min({name(c)}) AS {name(c)}" for c in others)]
    # Members repeat on every row they hold (one per queue): dropping the repeats in a plain hash
    # aggregate first leaves collect_set a set of clients per group, not of queues.
    members = select([names(by), "`ts`", "`_member`", *carried], sub(matching), group_by=[*by, "ts", "_member"])
    return select([names(by), "`ts`", "array_sort(collect_set(`_member`)) AS `_set`", *carried], sub(members),
                  group_by=[*by, "ts"])


def judge_churn(rule: ChurnRule, samples: str, stale_after: timedelta) -> str:
    """Findings of `rule` from its groups' samples (churn_samples) within `over`."""
    by = rule.group_by
    carried = [*_others(rule), *level_columns(rule), "_set"]
    previous = f"lag(`_set`) OVER (PARTITION BY {names(by)} ORDER BY `ts`)"
    per_sample = select(["*", f"{previous} AS `_previous`"], samples, in_window(rule.over))
    changed = "CAST(`_previous` IS NOT NULL AND `_set` <> `_previous` AS INT)"
    groups = select([names(by), f"CAST(sum({changed}) AS DOUBLE) AS `_value`", "max(`ts`) AS `_last`",
                     newest_of(carried)], sub(per_sample), group_by=by)
    groups = select([names(by), "`_value`", "`_last`", *unpack(carried), f"{fresh(stale_after, '_last')} AS `_fresh`",
                     "array_join(`_newest`.`_set`, ',') AS `members`"], sub(groups))
    return emit(sub(groups), rule, rule.template_inputs(), ("members",))


def plan_churn(rule: ChurnRule, source: str, stale_after: timedelta) -> str:
    """Reference: findings of `rule` over the table window `source`, in the normalised output shape."""
    window = sub(select(["*"], source, in_window(rule.over)))
    return judge_churn(rule, sub(churn_samples(rule, window)), stale_after)


def fold_churn(rule: ChurnRule, state: str | None, rows: str, stale_after: timedelta) -> str:
    """The groups' samples in `over` after summarising `rows` (whole collection cycles)."""
    new = churn_samples(rule, rows)
    gathered = new if state is None else f"SELECT * FROM {state} UNION ALL {new}"
    return f"SELECT * FROM ({gathered}) WHERE `ts` >= {ago(rule.over)}"
