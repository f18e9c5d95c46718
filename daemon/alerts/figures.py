"""An alert's figures as its rule defines them: the value in its unit, and a threshold only where one applies.

A rule whose condition is its `where` (CollectorTargetUnreachable fires on `where: not ok`) needs a
level every remaining row crosses: `above: {critical: -1}` on a duration, or `above: {warning: 0}`
under `where: ... and target_ok_calls > 0`. Such a level is no threshold an operator could compare
the value with, so the status page and the notifications state the rule's condition instead.

It lives with the alerts, below both the status page (daemon.http) and the notifiers (daemon.notify),
so both read an alert's figures the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from rules.expressions import BoolOp, ColumnRef, Compare, Literal, Neg, Node

# Units of quantities that cannot be negative (durations, sizes, counts, rates; rules/tables.py): a
# level below zero on them is crossed by every value, whatever happens. Offsets are not among them:
# RocketMQ reports -1 for an offset it does not know.
NON_NEGATIVE_UNITS = frozenset({"ms", "s", "minutes", "bytes", "MiB", "messages", "calls", "requests",
                                "notifications", "puts", "msg/s", "req/s"})


# Alert name -> its rule (None when unknown): how renderers find what a figure means.
RuleLookup = Callable[[str], object | None]


class Measured(Protocol):
    """Anything with an alert's value and threshold: a tracker instance or a notification's snapshot."""

    @property
    def value(self) -> float | None: ...

    @property
    def threshold(self) -> float | None: ...


@dataclass(frozen=True)
class Figures:
    """What to show for one alert's value and threshold."""

    value: float | None
    threshold: float | None  # None: no threshold applies
    unit: str = ""
    condition: str = ""  # the rule's `where`, when it rather than a level makes the alert fire


def figures(alert: Measured, rule: object | None) -> Figures:
    """The alert's value (with its unit) and threshold as `rule` defines them; the raw pair without a rule."""
    if rule is None:
        return Figures(alert.value, alert.threshold)
    unit = _unit(rule)
    if alert.threshold is not None and _level_always_crossed(rule, alert.threshold, unit):
        return Figures(alert.value, None, unit, str(getattr(rule, "where", "") or ""))
    return Figures(alert.value, alert.threshold, unit)


# What a kind's alert value is, whatever its `value:` column: a stall's and an absence's is seconds,
# a churn's a count of changes (spark/kinds/<kind>.py).
_KIND_UNITS = {"stall": "s", "absent": "s", "churn": "changes"}


def _unit(rule: object) -> str:
    """The unit of the rule's alert value: its kind's, else its `value:` column's (per second for a growth rate)."""
    kind_unit = _KIND_UNITS.get(str(getattr(rule, "kind", "")))
    if kind_unit is not None:
        return kind_unit
    unit = _column_unit(rule)
    if unit and getattr(rule, "measure", None) == "rate":
        return f"{unit}/s"
    return unit


def _column_unit(rule: object) -> str:
    value = getattr(rule, "value", None)
    tree = getattr(value, "tree", None)
    if not isinstance(tree, ColumnRef):
        return ""
    column = rule.table_def.column(tree.name)  # type: ignore[attr-defined]
    return column.unit if column is not None else ""


def _level_always_crossed(rule: object, threshold: float, unit: str) -> bool:
    """True when `threshold` is a constant level every row the rule keeps crosses: below zero (above)
    on a quantity that cannot be negative, or one its `where` already demands the value be past."""
    value = getattr(getattr(rule, "value", None), "tree", None)
    where = getattr(getattr(rule, "where", None), "tree", None)
    for side in ("above", "below"):
        levels = getattr(rule, side, None)
        for name in ("warning", "critical"):
            level = getattr(levels, name, None) if levels is not None else None
            constant = _constant(level.tree) if level is not None else None
            if constant is None or constant != threshold:
                continue
            if side == "above" and constant < 0 and unit in NON_NEGATIVE_UNITS:
                return True
            if isinstance(value, ColumnRef) and where is not None and _demands(where, value.name, side, constant):
                return True
    return False


# `column OP c` as `column > c` (above) or `column < c` (below): is the level crossed whenever it holds?
_PAST = {
    "above": {">": lambda c, level: c >= level, ">=": lambda c, level: c > level},
    "below": {"<": lambda c, level: c <= level, "<=": lambda c, level: c < level},
}
_FLIPPED = {">": "<", ">=": "<=", "<": ">", "<=": ">="}


def _demands(where: Node, column: str, side: str, level: float) -> bool:
    """True when a conjunct of `where` compares `column` with a constant that puts it past `level`."""
    conjuncts = where.operands if isinstance(where, BoolOp) and where.op == "and" else (where,)
    for node in conjuncts:
        if not isinstance(node, Compare) or len(node.ops) != 1:
            continue
        (op,), (left, right) = node.ops, node.operands
        if isinstance(right, ColumnRef) and not isinstance(left, ColumnRef):
            left, right, op = right, left, _FLIPPED.get(op, op)
        constant = _constant(right)
        past = _PAST[side].get(op)
        if isinstance(left, ColumnRef) and left.name == column and constant is not None and past is not None \
                and past(constant, level):
            return True
    return False


def _constant(tree: Node) -> float | None:
    if isinstance(tree, Neg):
        inner = _constant(tree.operand)
        return -inner if inner is not None else None
    if isinstance(tree, Literal) and isinstance(tree.value, int | float) and not isinstance(tree.value, bool):
        return float(tree.value)
    return None
