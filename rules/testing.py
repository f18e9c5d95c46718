"""Rule unit tests, promtool-style: input samples per table, evaluation times, expected alerts.

A test file reads like this (times are offsets from the start of the test):

    rule_files: [../consumer-cache.yaml]        # relative to this file; `builtin` for the pack
    evaluation_interval: 30s                    # samples and evaluations this far apart
    tests:
      - name: a blocked queue fires after `for`
        input:
          process_queue:
            - labels: {cluster: c, group: g, topic: T, broker: b, queue_id: 3, client_id: "10.0.0.1@1"}
              values:                            # one value per interval, compact series notation
                cached_msg_count: "5x20"         # 5, repeated: 21 samples
                last_consume_ts: "0+30x20"       # timestamps: age in seconds at each sample
              static: {max_span: 2000}           # the same value in every sample
        alert_rule_test:
          - eval_time: 5m
            alertname: ConsumptionBlocked
            exp_alerts:
              - labels: {group: g, queue_id: "3"}      # a subset of the alert's labels
                severity: critical
                annotations: {summary: "has not finished"}   # substrings

Series notation: `a+bxN` is a, a+b, ..., a+N*b (N+1 samples); `axN` repeats a; `_` is a missing
sample; several terms separated by spaces follow each other; a YAML list gives values one by one.
Columns not given take a neutral default (0, false, "", null for nullable ones; the sample's own
time for timestamps). This module parses and checks the file; daemon/offline/rule_tests.py runs it.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from rules.durations import Duration
from rules.loader import RuleError, _parse_file, _plain, _position, load_rule_files
from rules.tables import BOOL, FLOAT64, INT32, INT64, STRING, TABLES, TIMESTAMP, Column, Table

_TERM = re.compile(r"^(?P<start>-?\d+(?:\.\d+)?)(?:(?P<sign>[+-])(?P<step>\d+(?:\.\d+)?))?x(?P<times>\d+)$")
_SINGLE = re.compile(r"^-?\d+(?:\.\d+)?$")
MISSING = object()


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class InputSeries(_Strict):
    """One series of one table: its key columns, the columns that change and those that do not."""

    labels: dict[str, str | int | float | bool] = Field(description="the series' key columns")
    values: dict[str, str | list[Any] | int | float] = Field(default_factory=dict, description="column -> series")
    static: dict[str, Any] = Field(default_factory=dict, description="column -> one value for every sample")


class ExpectedAlert(_Strict):
    """An alert that must be active at the evaluation time; every other one is a failure."""

    labels: dict[str, str | int | float | bool] = Field(default_factory=dict, description="subset of the alert's labels")
    severity: Literal["warning", "critical"] | None = Field(None, description="checked when given")
    state: Literal["firing", "pending"] = "firing"
    annotations: dict[str, str] = Field(default_factory=dict, description="annotation -> substring it must contain")


class AlertRuleTest(_Strict):
    """What must be active for one rule at one time."""

    eval_time: Duration
    alertname: str
    exp_alerts: list[ExpectedAlert] = Field(default_factory=list)


class RuleTestCase(_Strict):
    """Input samples and the expectations checked against them."""

    name: str = ""
    interval: Duration | None = Field(None, description="default: the file's evaluation_interval")
    input: dict[str, list[InputSeries]] = Field(default_factory=dict, description="table -> series")
    alert_rule_test: list[AlertRuleTest] = Field(min_length=1)

    @field_validator("input")
    @classmethod
    def _known_tables(cls, value: dict[str, list[InputSeries]]) -> dict[str, list[InputSeries]]:
        for name in value:
            if name not in TABLES:
                raise ValueError(f"unknown table {name!r}; known tables: {', '.join(sorted(TABLES))}")
        return value


class RuleTestFile(_Strict):
    """A file of rule unit tests."""

    rule_files: list[str] = Field(min_length=1, description="rule files or dirs, relative to this file; 'builtin'")
    evaluation_interval: Duration = timedelta(seconds=30)
    tests: list[RuleTestCase] = Field(min_length=1)


@dataclass
class LoadedTests:
    """A parsed test file plus where its rule files are."""

    path: Path
    spec: RuleTestFile
    rule_paths: list[str]
    rules: list[Any] = field(default_factory=list)


class RuleTestError(Exception):
    """A test file is invalid; `errors` are positioned `file:line:col: field: message`."""

    def __init__(self, errors: Sequence[RuleError]) -> None:
        self.errors = list(errors)
        super().__init__("\n".join(map(str, self.errors)))


def expand_series(text: str | int | float | list[Any]) -> list[Any]:
    """The samples a series notation stands for; `_` becomes MISSING. ValueError names the bad term."""
    if isinstance(text, list):
        return [MISSING if v == "_" else v for v in text]
    if isinstance(text, int | float) and not isinstance(text, bool):
        return [text]
    out: list[Any] = []
    for term in str(text).split():
        if term == "_":
            out.append(MISSING)
            continue
        if _SINGLE.match(term):
            out.append(_number(term))
            continue
        m = _TERM.match(term)
        if m is None:
            raise ValueError(f"cannot read series term {term!r}; write a+bxN, axN, a number or _")
        start, times = _number(m["start"]), int(m["times"])
        step = _number(m["step"]) if m["step"] else 0
        if m["sign"] == "-":
            step = -step
        out.extend(start + i * step for i in range(times + 1))
    return out


def _number(text: str) -> int | float:
    return float(text) if "." in text else int(text)


def _coerce(column: Column, value: Any, sample_ts: datetime) -> Any:
    if value is None:
        return None
    if column.type == TIMESTAMP:
        if isinstance(value, datetime):
            return value
        # Timestamps are written as their age in seconds at the sample: "0+30x10" is a frozen time.
        return sample_ts - timedelta(seconds=float(value))
    if column.type in (INT32, INT64):
        return int(value)
    if column.type == FLOAT64:
        return float(value)
    if column.type == BOOL:
        if isinstance(value, str):
            return value.strip().lower() in ("true", "1", "yes")
        return bool(value)
    return str(value)


def _default(column: Column, sample_ts: datetime) -> Any:
    if column.type == TIMESTAMP:
        return sample_ts
    if column.nullable:
        return None
    return {INT32: 0, INT64: 0, FLOAT64: 0.0, BOOL: False, STRING: ""}[column.type]


def series_rows(table: Table, series: InputSeries, start: datetime, interval: timedelta) -> list[dict[str, Any]]:
    """The rows one input series stands for, one per sample; ValueError names an unknown column."""
    for name in (*series.labels, *series.values, *series.static):
        column = table.column(name)
        if column is None or name == "ts":
            raise ValueError(f"unknown column {name!r} in table {table.name}")
        if column.derived is not None:
            raise ValueError(f"column {name!r} of {table.name} is derived ({column.derived}); give its inputs")
    expanded = {name: expand_series(text) for name, text in series.values.items()}
    length = max((len(v) for v in expanded.values()), default=1)
    rows: list[dict[str, Any]] = []
    for i in range(length):
        sample_ts = start + i * interval
        values = {name: (v[i] if i < len(v) else MISSING) for name, v in expanded.items()}
        if any(v is MISSING for v in values.values()):
            continue  # `_`: no sample at all at this time, as when a collector missed a cycle
        row: dict[str, Any] = {}
        for column in table.stored_columns:
            if column.name == "ts":
                row["ts"] = sample_ts
            elif column.name in values:
                row[column.name] = _coerce(column, values[column.name], sample_ts)
            elif column.name in series.static:
                row[column.name] = _coerce(column, series.static[column.name], sample_ts)
            elif column.name in series.labels:
                row[column.name] = _coerce(column, series.labels[column.name], sample_ts)
            else:
                row[column.name] = _default(column, sample_ts)
        rows.append(row)
    return rows


def load_test_file(path: str | Path) -> LoadedTests:
    """Parse and validate a rule test file; RuleTestError lists every problem with its position."""
    path = Path(path)
    doc, error = _parse_file(path)
    if error is not None:
        raise RuleTestError([error])
    try:
        spec = RuleTestFile.model_validate(_plain(doc))
    except ValidationError as exc:
        errors = []
        for err in exc.errors():
            loc = [p for p in err["loc"] if not (isinstance(p, str) and p in ("str", "list[any]", "int", "float"))]
            line, col = _position(doc, loc)
            message = err["msg"].removeprefix("Value error, ")
            errors.append(RuleError(str(path), line, col, None, None, ".".join(map(str, loc)), message))
        raise RuleTestError(errors) from None
    problems: list[RuleError] = []
    for ti, case in enumerate(spec.tests):
        for table_name, series_list in case.input.items():
            for si, series in enumerate(series_list):
                loc: list[str | int] = ["tests", ti, "input", table_name, si]
                try:
                    series_rows(TABLES[table_name], series, datetime(2026, 1, 1), spec.evaluation_interval)
                except ValueError as exc:
                    line, col = _position(doc, loc)
                    problems.append(RuleError(str(path), line, col, None, None, ".".join(map(str, loc)), str(exc)))
    if problems:
        raise RuleTestError(problems)
    rule_paths = [p if p == "builtin" else str((path.parent / p).resolve()) for p in spec.rule_files]
    rules = list(load_rule_files(rule_paths).rules)  # RuleLoadError: the rule files' own positions
    known = {r.alert for r in rules}
    for ti, case in enumerate(spec.tests):
        for ci, check in enumerate(case.alert_rule_test):
            # A misspelt alertname with `exp_alerts: []` would otherwise pass for ever.
            if check.alertname not in known:
                loc = ["tests", ti, "alert_rule_test", ci, "alertname"]
                line, col = _position(doc, loc)
                close = difflib.get_close_matches(check.alertname, sorted(known), n=1)
                hint = f"; did you mean {close[0]!r}?" if close else ""
                problems.append(RuleError(str(path), line, col, None, None, ".".join(map(str, loc)),
                                          f"no rule {check.alertname!r} in {', '.join(spec.rule_files)}{hint}"))
    if problems:
        raise RuleTestError(problems)
    return LoadedTests(path=path, spec=spec, rule_paths=rule_paths, rules=rules)


@dataclass(frozen=True)
class ActiveAlert:
    """An alert as the runner saw it at an evaluation time (plain data: rules/ knows no daemon)."""

    rule: str
    labels: dict[str, str]
    severity: str | None
    state: str
    annotations: dict[str, str]

    def describe(self, annotations: Sequence[str] = ()) -> str:
        """`Rule{k="v"} severity state`, plus the named annotations, for a diff."""
        labels = ",".join(f'{k}="{v}"' for k, v in sorted(self.labels.items()))
        notes = "".join(f"\n      {name}: {self.annotations.get(name, '')!r}" for name in annotations)
        return f"{self.rule}{{{labels}}} {self.severity or 'no data'} {self.state}{notes}"


@dataclass
class Mismatch:
    """One expectation that failed, in words."""

    test: str
    eval_time: timedelta
    alertname: str
    missing: list[str] = field(default_factory=list)
    unexpected: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [f"FAILED {self.test!r} at {self.eval_time}, alertname {self.alertname}:"]
        lines += [f"  - expected, not found: {m}" for m in self.missing]
        lines += [f"  + found, not expected: {u}" for u in self.unexpected]
        return "\n".join(lines)


def _label_text(value: Any) -> str:
    # Labels are strings; YAML `orderly: false` or `queue_id: 3` mean "false" and "3".
    return str(value).lower() if isinstance(value, bool) else str(value)


def _matches(expected: ExpectedAlert, got: ActiveAlert) -> bool:
    if any(got.labels.get(k) != _label_text(v) for k, v in expected.labels.items()):
        return False
    if expected.severity is not None and got.severity != expected.severity:
        return False
    if got.state != expected.state:
        return False
    return all(sub in got.annotations.get(name, "") for name, sub in expected.annotations.items())


def _describe_expected(alertname: str, expected: ExpectedAlert) -> str:
    labels = ",".join(f'{k}="{v}"' for k, v in sorted(expected.labels.items()))
    notes = "".join(f" {k}~{v!r}" for k, v in expected.annotations.items())
    return f"{alertname}{{{labels}}} {expected.severity or 'any severity'} {expected.state}{notes}"


def compare(test: str, check: AlertRuleTest, active: Sequence[ActiveAlert]) -> Mismatch | None:
    """None when the alerts of `check.alertname` are exactly those expected, else what differs.

    Firing alerts are always compared; pending ones only when an expectation asks for pending.
    """
    wants_pending = any(e.state == "pending" for e in check.exp_alerts)
    got = [a for a in active if a.rule == check.alertname and (a.state == "firing" or wants_pending)]
    remaining = list(got)
    missing: list[str] = []
    for expected in check.exp_alerts:
        hit = next((a for a in remaining if _matches(expected, a)), None)
        if hit is None:
            missing.append(_describe_expected(check.alertname, expected))
        else:
            remaining.remove(hit)
    if not missing and not remaining:
        return None
    asked = sorted({name for e in check.exp_alerts for name in e.annotations})
    return Mismatch(test, check.eval_time, check.alertname, missing, [a.describe(asked) for a in remaining])
