"""Run rule unit tests (rules/testing.py) through the real pipeline: Parquet, Spark, the alert tracker.

Each test case gets a fresh store and a fresh in-memory alert state; the rules are evaluated at
every interval from the start to the latest `eval_time`, so `for` and `keep_firing_for` behave
exactly as in the daemon.
"""

from __future__ import annotations

import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from daemon.alerts.db import StateDB
from daemon.alerts.tracker import AlertTracker
from daemon.store.case_input import START, write_case_input
from daemon.store.writer import ParquetStore
from rules.testing import (
    ActiveAlert,
    LoadedTests,
    Mismatch,
    RuleTestCase,
    compare,
    load_test_file,
)


@dataclass
class FileResult:
    """What one test file gave: the checks run and those that failed."""

    path: Path
    checks: int = 0
    failures: list[Mismatch] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """True when every check passed."""
        return not self.failures


def run_case(spark: Any, loaded: LoadedTests, case: RuleTestCase, index: int) -> tuple[int, list[Mismatch]]:
    """Run one test case; returns (checks made, failures)."""
    from spark.reference import (
        evaluate_reference,  # keeps `rocketwatch check` and this module's import JVM-free
    )

    # Only the rules this case checks: rules never affect each other's alerts, and every rule
    # left out is a Spark plan less at every step.
    checked = {check.alertname for check in case.alert_rule_test}
    rules = [r for r in loaded.rules if r.alert in checked]
    timings = {r.alert: r.timing for r in rules}
    interval = case.interval or loaded.spec.evaluation_interval
    name = case.name or f"test {index + 1}"
    checks_at: dict[timedelta, list] = defaultdict(list)
    for check in case.alert_rule_test:
        checks_at[check.eval_time].append(check)
    last = max(checks_at)
    failures: list[Mismatch] = []
    with tempfile.TemporaryDirectory(prefix="rocketwatch-rule-test-") as tmp:
        store = ParquetStore(Path(tmp) / "store")
        write_case_input(store, case, interval)
        db = StateDB(":memory:")  # the tracker's real SQL, nothing left behind
        try:
            tracker = AlertTracker(db)
            offset = timedelta(0)
            while offset <= last:
                now = START + offset
                findings = evaluate_reference(spark, store.root, rules, now, 2 * interval)
                tracker.update(timings, findings, now)
                due = [t for t in checks_at if offset <= t < offset + interval]
                active = [
                    ActiveAlert(a.rule, dict(a.labels), a.severity, a.state, dict(a.annotations))
                    for a in tracker.active_alerts()
                ]
                for t in due:
                    for check in checks_at[t]:
                        mismatch = compare(name, check, active)
                        if mismatch is not None:
                            failures.append(mismatch)
                offset += interval
        finally:
            db.close()
    return len(case.alert_rule_test), failures


def run_test_file(spark: Any, path: str | Path) -> FileResult:
    """Run every case of one test file; RuleTestError (bad file) propagates to the caller."""
    return run_loaded(spark, load_test_file(path))


def run_loaded(spark: Any, loaded: LoadedTests) -> FileResult:
    """Run every case of an already validated test file."""
    result = FileResult(loaded.path)
    for i, case in enumerate(loaded.spec.tests):
        checks, failures = run_case(spark, loaded, case, i)
        result.checks += checks
        result.failures += failures
    return result
