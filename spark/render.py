"""Turn the rows an evaluation collected into Findings with rendered annotations (plain Python)."""

from __future__ import annotations

import logging
import math
from collections.abc import Mapping
from typing import Any

from rules.findings import Finding
from rules.kinds.base import TEMPLATE_FIELDS, RuleBase
from rules.tables import FLOAT64

log = logging.getLogger(__name__)


def format_number(value: float | int | None) -> str:
    """A number as an operator reads it: 3626 not 3626.0, 0.123, 12.3, 1235 (no exponent)."""
    if value is None:
        return "n/a"
    number = float(value)
    if math.isnan(number) or math.isinf(number):
        return str(number)
    if number.is_integer():
        return str(int(number))
    # Three significant digits, but never drop integer digits: 1234.5 -> 1235, not 1.23e+03.
    if abs(number) >= 100:
        return str(round(number))
    return f"{number:.3g}"


class _Inputs(dict[str, str]):
    """Template values; a name the row did not carry renders as `{name}` instead of failing."""

    def __missing__(self, key: str) -> str:
        return "{" + key + "}"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _inputs(rule: RuleBase, row: Mapping[str, Any]) -> _Inputs:
    values = _Inputs()
    table = rule.table_def
    for name, text in (row["inputs"] or {}).items():
        column = table.column(name)
        if text is None:
            values[name] = "n/a"
        elif (column is not None and column.type == FLOAT64) or (column is None and _is_number(text)):
            # Kind-computed values (peer_value, peers...) arrive as Spark's text of a double: 100.0.
            values[name] = format_number(float(text))
        else:
            values[name] = text
    values["value"] = format_number(row["value"])
    values["threshold"] = format_number(row["threshold"])
    values["severity"] = row["severity"] or "no data"
    return values


def render(template: str, values: Mapping[str, str], where: str = "") -> str:
    """`template` with its `{name}` placeholders filled; a broken template is returned as written
    (the alert still goes out, with the raw text) and logged once per `where`."""
    try:
        return template.format_map(values)
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        if where and where not in _reported:
            _reported.add(where)
            log.warning("%s: template %r cannot be filled (%s: %s); the raw text is sent instead",
                        where, template[:120], type(exc).__name__, exc)
        return template


_reported: set[str] = set()


def to_finding(rule: RuleBase, row: Mapping[str, Any]) -> Finding:
    """One collected output row as a Finding of `rule`."""
    values = _inputs(rule, row)
    annotations = {field: render(getattr(rule, field), values, f"rule {rule.alert}, {field}")
                   for field in TEMPLATE_FIELDS}
    return Finding(
        rule=rule.alert,
        labels=dict(row["labels"] or {}),
        severity=row["severity"],
        value=row["value"],
        threshold=row["threshold"],
        annotations=annotations,
        no_data=bool(row["no_data"]),
    )
