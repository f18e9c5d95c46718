"""Warning/critical levels shared by the kinds that have them: compute, reduce, compare, emit.

A kind's plan builds one row per series with `_value`, `_fresh` (newest sample within
stale_after) and the level columns (`level_columns`), then calls `finish`, which reduces to the
rule's `by` when it is coarser than the series key and emits the normalised output rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from rules.expressions import Expression
from rules.kinds.base import RuleBase
from rules.kinds.threshold import Levels
from spark.expressions import compile_expression
from spark.kinds.common import inputs_map, label_map, select, sub, unpack
from spark.sql import literal, name, names, struct

LEVEL_COLUMNS = {("above", "critical"): "_ac", ("above", "warning"): "_aw",
                 ("below", "critical"): "_bc", ("below", "warning"): "_bw"}
_REDUCERS = {"max": "max", "min": "min", "sum": "sum", "avg": "avg"}

# (value expression) -> (severity expression, threshold expression); severity null means "not firing".
Judge = Callable[[str], tuple[str, str]]


def level_columns(rule: RuleBase) -> dict[str, str]:
    """The level columns (_ac, _aw, _bc, _bw) of the levels a rule with `above`/`below` sets, as doubles:
    a level the rule leaves out is no column at all (`level` reads it as null)."""
    columns = {}
    for (side, level), column in LEVEL_COLUMNS.items():
        levels: Levels | None = getattr(rule, side, None)
        expr: Expression | None = getattr(levels, level) if levels is not None else None
        if expr is not None:
            columns[column] = f"CAST({compile_expression(expr.tree, rule.table_def)} AS DOUBLE)"
    return columns


def level(column: str, present: Iterable[str], suffix: str = "") -> str:
    """Level column `column` (+ suffix), or a typed null when the rule has no such level."""
    return name(column + suffix) if column in present else "CAST(NULL AS DOUBLE)"


def crossed(value: str, present: Iterable[str], suffix: str = "") -> dict[str, str]:
    """Per level the rule has, the condition that `value` crosses it (a null level or value crosses
    nothing; strict comparisons, as the RocketMQ client's own checks)."""
    return {column: f"coalesce({value} {'>' if side == 'above' else '<'} {name(column + suffix)}, FALSE)"
            for (side, _), column in LEVEL_COLUMNS.items() if column in present}


def severity_columns(value: str, present: Iterable[str], suffix: str = "") -> tuple[str, str]:
    """(severity, threshold) from `value` and the level columns the rule has (+ suffix)."""
    c = crossed(value, tuple(present), suffix)
    critical = [c[col] for col in ("_ac", "_bc") if col in c]
    warning = [c[col] for col in ("_aw", "_bw") if col in c]
    cases = ([f"WHEN {' OR '.join(critical)} THEN 'critical'"] if critical else []) + \
            ([f"WHEN {' OR '.join(warning)} THEN 'warning'"] if warning else [])
    severity = f"CASE {' '.join(cases)} END" if cases else "CAST(NULL AS STRING)"
    thresholds = [f"WHEN {c[col]} THEN {name(col + suffix)}" for col in ("_ac", "_bc", "_aw", "_bw") if col in c]
    threshold = f"CASE {' '.join(thresholds)} END" if thresholds else "CAST(NULL AS DOUBLE)"
    return severity, threshold


def duration_judge(warning_s: float, critical_s: float | None, severity: str) -> Judge:
    """Severity `severity` when value >= warning_s, critical when value >= critical_s (durations in seconds)."""

    def judge(value: str) -> tuple[str, str]:
        warn = f"{value} >= {literal(float(warning_s))}"
        sev = f"CASE WHEN {warn} THEN {literal(severity)} END"
        thr = f"CASE WHEN {warn} THEN {literal(float(warning_s))} END"
        if critical_s is not None:
            crit = f"{value} >= {literal(float(critical_s))}"
            sev = f"CASE WHEN {crit} THEN 'critical' ELSE {sev} END"
            thr = f"CASE WHEN {crit} THEN {literal(float(critical_s))} ELSE {thr} END"
        return sev, thr

    return judge


def reduce_value(rule: RuleBase, value: str) -> str:
    """The aggregate of `value` that the rule's `reduce:` names, as a double."""
    if rule.reduce == "count":
        return f"CAST(count({value}) AS DOUBLE)"
    if rule.reduce == "count_distinct":
        return f"CAST(count(DISTINCT {value}) AS DOUBLE)"
    return f"CAST({_REDUCERS[rule.reduce]}({value}) AS DOUBLE)"


def reduce_groups(source: str, rule: RuleBase, keys: tuple[str, ...], inputs: tuple[str, ...],
                  extra: tuple[str, ...] = ()) -> str:
    """One row per `keys` group: reduced value and levels over its fresh series.

    Levels reduce to the least sensitive one in the group (max for above, min for below), so a
    group alert never fires on a level no member has. Input columns outside `keys` (and `extra`
    columns) come from the series with the largest value (smallest for below-only rules). A
    group is fresh when any of its series is.
    """
    others = [c for c in (*inputs, *extra) if c not in keys]
    levels = [c for c in LEVEL_COLUMNS.values() if c in level_columns(rule)]
    value = "CASE WHEN `_fresh` THEN `_value` END"
    pick = "min_by" if getattr(rule, "above", None) is None else "max_by"
    aggs = [
        *(name(k) for k in keys),
        f"{reduce_value(rule, value)} AS `_value`",
        "max(CAST(`_fresh` AS INT)) AS `_has_fresh`",
        *(f"{'max' if c.startswith('_a') else 'min'}(CASE WHEN `_fresh` THEN {name(c)} END) AS {name(c)}" for c in levels),
    ]
    if others:
        aggs.append(f"{pick}({struct({c: name(c) for c in others})}, {value}) AS `_worst`")
    grouped = select(aggs, source, group_by=keys)
    return select([names(keys), "`_value`", *(name(c) for c in levels), "(`_has_fresh` = 1) AS `_fresh`",
                   *unpack(others, "_worst")], sub(grouped))


def finish(source: str, rule: RuleBase, inputs: tuple[str, ...], extra: tuple[str, ...] = (),
           judge: Judge | None = None) -> str:
    """Output rows: reduce to `by` if coarser than the series, compare with the levels, stale -> no_data.

    `extra` names columns of template values the kind computed (e.g. members), added to the inputs;
    `judge` replaces the level comparison for kinds whose levels are fixed durations.
    """
    if rule.reduces:
        source = sub(reduce_groups(source, rule, rule.group_by, inputs, extra))
    return emit(source, rule, inputs, extra, judge)


def emit(source: str, rule: RuleBase, inputs: tuple[str, ...], extra: tuple[str, ...] = (),
         judge: Judge | None = None) -> str:
    """Compare `_value` with the levels (or `judge`) and select the normalised output shape."""
    if judge is None:
        present = tuple(level_columns(rule))

        def judge(value: str) -> tuple[str, str]:
            return severity_columns(value, present)

    severity, threshold = judge("`_value`")
    judged = select(["*", f"{severity} AS `_emit_severity`", f"{threshold} AS `_emit_threshold`"], source)
    return select([
        f"{literal(rule.alert)} AS `rule`",
        f"{label_map(rule)} AS `labels`",
        "CASE WHEN `_fresh` THEN `_emit_severity` END AS `severity`",
        "CASE WHEN `_fresh` THEN `_value` END AS `value`",
        "CASE WHEN `_fresh` THEN `_emit_threshold` END AS `threshold`",
        "NOT `_fresh` AS `no_data`",
        f"{inputs_map(rule, (*inputs, *extra))} AS `inputs`",
    ], sub(judged), "(NOT `_fresh` OR `_emit_severity` IS NOT NULL)")
