"""Turn the rows an evaluation collected into Findings with rendered annotations (plain Python)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from rules.findings import Finding
from rules.kinds.base import TEMPLATE_FIELDS, RuleBase
from rules.tables import BOOL, FLOAT64, INT32, INT64, TIMESTAMP
from rules.templates import Part, TemplateError, format_number, parse_template, render_template, tidy

__all__ = ["format_number", "render", "to_finding"]

log = logging.getLogger(__name__)


def _typed(text: str, column_type: str | None) -> Any:
    """A value of the row's inputs (Spark's text of it) back as the type its column declares."""
    if column_type == BOOL:
        return text.strip().lower() == "true"
    if column_type in (INT32, INT64):
        # int, not float: an offset past 2**53 must print as the broker reports it.
        try:
            return int(text)
        except ValueError:
            return float(text)
    if column_type == FLOAT64:
        return float(text)
    if column_type == TIMESTAMP:
        try:
            return datetime.fromisoformat(text).replace(tzinfo=UTC)
        except ValueError:
            return text
    if column_type is None:
        # Kind-computed values (peer_value, peers...) arrive as Spark's text of a double: 100.0.
        try:
            return float(text)
        except ValueError:
            return text
    return text


def _inputs(rule: RuleBase, row: Mapping[str, Any]) -> dict[str, Any]:
    """The row's template values, typed: numbers, booleans, timestamps, text, None for null."""
    values: dict[str, Any] = {}
    table = rule.table_def
    for name, text in (row["inputs"] or {}).items():
        column = table.column(name)
        values[name] = None if text is None else _typed(text, column.type if column is not None else None)
    values["value"] = row["value"]
    values["threshold"] = row["threshold"]
    values["severity"] = row["severity"] or "no data"
    return values


@functools.lru_cache(maxsize=1024)
def _parsed(template: str) -> tuple[Part, ...]:
    return parse_template(template)


def render(template: str, values: Mapping[str, Any], where: str = "") -> str:
    """`template` filled from typed `values` (rules/templates.py); a broken template is returned as
    written (the alert still goes out, with the raw text) and logged once per `where`."""
    try:
        return tidy(render_template(_parsed(template), values))
    except (TemplateError, TypeError) as exc:
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
                   for field in TEMPLATE_FIELDS if getattr(rule, field)}
    return Finding(
        rule=rule.alert,
        labels=dict(row["labels"] or {}),
        severity=row["severity"],
        value=row["value"],
        threshold=row["threshold"],
        annotations=annotations,
        no_data=bool(row["no_data"]),
    )
