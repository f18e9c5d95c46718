"""Fixtures for the rule-kind tests: a store written cycle by cycle, rules evaluated at NOW.

`evaluate` runs both paths, the reference (full window) and the incremental engine (a fresh
Evaluator folding every committed cycle), and fails when they disagree: every kind test is also a
differential test of its kind's fold and judge."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from daemon.store.writer import ParquetStore
from rules.findings import Finding
from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from spark.reference import evaluate_reference
from tests.spark.kind_samples import NOW, STALE, comparable, rule_yaml


@pytest.fixture
def write(tmp_path: Path) -> Callable[[str, Iterable[dict[str, Any]]], None]:
    """Append rows to `table` of a fresh store, one file per distinct ts (as collection cycles do)."""
    store = ParquetStore(tmp_path / "store")

    def append(table: str, rows: Iterable[dict[str, Any]]) -> None:
        by_ts: dict[datetime, list[dict[str, Any]]] = {}
        for row in rows:
            by_ts.setdefault(row["ts"], []).append(row)
        for ts, cycle in sorted(by_ts.items()):
            store.append(table, cycle, ts)

    return append


@pytest.fixture
def evaluate(spark: Any, tmp_path: Path) -> Callable[..., list[Finding]]:
    """Evaluate rules (dicts of fields) against the `write` store at NOW (or `now`)."""

    def run(*rules: dict[str, Any], now: datetime = NOW, stale_after: timedelta = STALE) -> list[Finding]:
        path = tmp_path / "rules.yaml"
        path.write_text(rule_yaml(*rules))
        loaded = load_rule_files([path]).rules
        reference = evaluate_reference(spark, tmp_path / "store", loaded, now, stale_after)
        evaluator = Evaluator(spark, tmp_path / "store")
        incremental = evaluator.evaluate(loaded, now, stale_after)
        assert not evaluator.last_cycle.startswith("failed"), evaluator.last_cycle  # not the reference's findings
        assert comparable(incremental) == comparable(reference), "the kept state judged otherwise than the window"
        return reference

    return run
