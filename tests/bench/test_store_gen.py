"""The benchmark's synthetic store is a real store: the built-in pack finds exactly its planted faults."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.store_gen import write_store
from rules.loader import load_rule_files
from spark.evaluate import Evaluator

NOW = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


def test_pack_finds_the_stuck_and_the_full_group_only(spark: object, tmp_path: Path) -> None:
    """group0's commits are frozen with lag, group1's caches are full; every other group is healthy."""
    rows = write_store(tmp_path, series=48, cycles=21, now=NOW)
    assert rows > 48 * 21 * 3
    findings = Evaluator(spark, tmp_path).evaluate(list(load_rule_files(["builtin"]).rules), NOW,
                                                   timedelta(minutes=1))
    by_rule: dict[str, set[str]] = {}
    for finding in findings:
        assert not finding.no_data, finding
        by_rule.setdefault(finding.rule, set()).add(finding.labels.get("group", ""))
    assert by_rule.get("ProcessQueueCachedCountHigh") == {"group1"}
    assert by_rule.get("StuckMessage") == {"group0"}
    assert set().union(*by_rule.values()) <= {"group0", "group1"}
