"""The built-in pack's own unit tests run in the normal suite, and every built-in rule must have one."""

from __future__ import annotations

from pathlib import Path

import pytest

from daemon.offline.rule_tests import run_test_file
from rules.loader import BUILTIN_DIR, load_rule_files
from rules.testing import load_test_file

TEST_FILES = sorted((BUILTIN_DIR / "tests").glob("*.test.yaml"))


@pytest.mark.spark
@pytest.mark.parametrize("path", TEST_FILES, ids=[p.name for p in TEST_FILES])
def test_builtin_rule_test_file_passes(spark, path: Path):
    result = run_test_file(spark, path)
    assert result.ok, "\n".join(map(str, result.failures))
    assert result.checks > 0


def test_every_builtin_rule_has_a_runbook_and_a_unit_test():
    tested = {check.alertname for path in TEST_FILES for case in load_test_file(path).spec.tests
              for check in case.alert_rule_test}
    problems = []
    for rule in load_rule_files(["builtin"]).rules:
        for field in ("summary", "diagnosis", "next_steps"):
            # A runbook line is a sentence with the series' own values, not a placeholder.
            if len(getattr(rule, field).split()) < (6 if field == "summary" else 30):
                problems.append(f"{rule.alert}: {field} is too thin to act on at 3 a.m.")
        # The page opens with it (issue 44): one concrete action, never the rule's name again.
        if len(rule.first_step.split()) < 6:
            problems.append(f"{rule.alert}: first_step is missing or too thin to open a page with")
        if rule.alert not in tested:
            problems.append(f"{rule.alert}: no test in rules/builtin/tests/ names it as alertname")
    assert not problems, "\n".join(problems)
