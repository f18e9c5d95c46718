"""The `absent` kind: `by` groups seen in the `over:` window whose newest sample is older than stale_after.

The alert's value is the seconds from the group's newest sample to `now`; it fires with the rule's
severity past stale_after, critical past critical_after. Absence is the finding: never no_data.

Kept state: per `by` group, the newest row among the rows passing `exclude` and `where` (its time
and the columns the rule reads), dropped once it leaves `over`.
"""

from __future__ import annotations

from datetime import timedelta

from rules.kinds.absent import AbsentRule
from spark.kinds.common import (
    Part,
    columns_read,
    in_window,
    newest_of,
    renamed,
    sample_conditions,
    seconds_between,
    select,
    sql_type,
    sub,
    unpack,
)
from spark.kinds.levels import duration_judge, emit
from spark.sql import NOW, ago, literal, name, names, struct


def plan_absent(rule: AbsentRule, source: str, stale_after: timedelta) -> str:
    """Reference: findings of `rule` over the table window `source`, in the normalised output shape."""
    inputs = rule.template_inputs()
    carried = [c for c in inputs if c not in rule.group_by]
    groups = select([names(rule.group_by), "max(`ts`) AS `_last`", newest_of(carried)], source,
                    in_window(rule.over), *sample_conditions(rule), group_by=rule.group_by)
    groups = select([names(rule.group_by), "`_last`", *unpack(carried), "TRUE AS `_fresh`",
                     f"{seconds_between(NOW, '`_last`')} AS `_value`"], sub(groups))
    # Strictly older than stale_after: a sample exactly stale_after old still counts as fresh elsewhere.
    silent = stale_after.total_seconds()
    critical = rule.critical_after.total_seconds() if rule.critical_after is not None else None

    def judge(value: str) -> tuple[str, str]:
        severity, threshold = duration_judge(silent, critical, rule.severity)(value)
        quiet = f"{value} > {literal(float(silent))}"
        return f"CASE WHEN {quiet} THEN {severity} END", f"CASE WHEN {quiet} THEN {threshold} END"

    return emit(sub(groups), rule, inputs, judge=judge)


def part_absent(rule: AbsentRule, prefix: str, stale_after: timedelta) -> Part:
    """Each `by` group's newest matching row, in a frame of the groups: its time (`prefix`_ts) and the
    columns the rule reads; a group not seen in `over` is dropped."""
    table = rule.table_def
    by = rule.group_by
    columns = [c for c in columns_read(rule) if c not in by and c != "ts"]
    ok, last, new_last, new_row = (name(prefix + c) for c in ("_ok", "ts", "_new_ts", "_new_row"))
    newer = f"n.{new_last} IS NOT NULL AND (s.{last} IS NULL OR n.{new_last} >= s.{last})"
    return Part(
        key=by,
        types={prefix + "ts": "TIMESTAMP", **{prefix + c: sql_type(table, c) for c in columns}},
        rows={prefix + "_ok": " AND ".join(sample_conditions(rule))},
        new={prefix + "_new_ts": f"max(CASE WHEN {ok} THEN `ts` END)",
             prefix + "_new_row": f"max_by(CASE WHEN {ok} THEN {struct({c: name(c) for c in columns})} END, "
                                  f"CASE WHEN {ok} THEN `ts` END)"},
        fold={prefix + "ts": f"greatest(s.{last}, n.{new_last})",
              **{prefix + c: f"CASE WHEN {newer} THEN n.{new_row}.{name(c)} ELSE s.{name(prefix + c)} END" for c in columns}},
        alive=f"{last} >= {ago(rule.over)}",
        view=lambda frame: sub(select([names(by), *renamed(prefix, ["ts", *columns])], frame, f"{last} IS NOT NULL")),
    )


def judge_absent(rule: AbsentRule, state: str, stale_after: timedelta) -> str:
    """Findings of `rule` from each group's newest matching row: plan_absent over them."""
    return plan_absent(rule, state, stale_after)
