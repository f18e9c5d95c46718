"""Newest samples proved to be one row per series are judged without sorting them (spark/evaluate.py)."""

from pathlib import Path

from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from tests.spark.kind_samples import NOW, STALE, at, cq_row, rule_yaml

RULES = (
    {"alert": "Lagging", "kind": "threshold", "table": "consumer_queue", "value": "lag", "above": {"warning": 100}},
    {"alert": "GroupLagging", "kind": "threshold", "table": "consumer_queue", "value": "lag", "by": ["cluster", "group"],
     "reduce": "sum", "above": {"warning": 100}},
    {"alert": "Stalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset", "while": "lag > 0",
     "over": "2m"},
)


def _cycle(seconds_ago: int, offset: int) -> list[dict]:
    return [cq_row(at(seconds_ago), "stuck", 0, broker_offset=5000, consumer_offset=10),
            cq_row(at(seconds_ago), "fine", 1, broker_offset=offset, consumer_offset=offset)]


def _rules(tmp_path: Path):
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(*RULES))
    return load_rule_files([path]).rules


def _found(spark, root: Path, rules, **options) -> list:
    return sorted((f.rule, sorted(f.labels.items()), f.severity, f.value, f.no_data)
                  for f in Evaluator(spark, root, **options).evaluate(rules, NOW, STALE))


def _physical(spark, root: Path, rules) -> str:
    plan = Evaluator(spark, root, prune_min_rows=0).plan(rules, NOW, STALE)
    return plan._jdf.queryExecution().executedPlan().toString()


def test_one_row_per_series_at_the_newest_time_is_judged_without_a_sort(spark, write, tmp_path):
    write("consumer_queue", [row for minute in range(6) for row in _cycle(300 - 60 * minute, 100 * minute)])
    rules, root = _rules(tmp_path), tmp_path / "store"
    # Every series' newest row is the last cycle's only row of it: nothing to rank. (The stall's
    # prefilter on the first evaluation still sorts its window: only the newest-row windows go.)
    assert "row_number()" not in _physical(spark, root, rules)
    found = _found(spark, root, rules, prune_min_rows=0)
    assert found == _found(spark, root, rules, prune_min_rows=None)
    assert {(rule, dict(labels)["group"]) for rule, labels, *_ in found} == {
        ("Lagging", "stuck"), ("GroupLagging", "stuck"), ("Stalled", "stuck")}


def test_a_row_written_twice_is_still_one_finding(spark, write, tmp_path):
    # The newest cycle holds the stuck queue's row twice (a cycle written again after a crash):
    # the counts of rows and series differ, so each series' newest row is picked as before.
    cycles = [row for minute in range(6) for row in _cycle(300 - 60 * minute, 100 * minute)]
    write("consumer_queue", [*cycles, cq_row(at(0), "stuck", 0, broker_offset=5000, consumer_offset=10)])
    rules, root = _rules(tmp_path), tmp_path / "store"
    assert "row_number()" in _physical(spark, root, rules)
    found = _found(spark, root, rules, prune_min_rows=0)
    assert found == _found(spark, root, rules, prune_min_rows=None)
    assert [rule for rule, *_ in found] == ["GroupLagging", "Lagging", "Stalled"]


def test_a_series_gone_quiet_keeps_its_older_row(spark, write, tmp_path):
    # The stuck queue missed the last cycle: two newest times, so the rows are ranked again, and the
    # stuck queue is judged on its row of a minute ago.
    cycles = [row for minute in range(6) for row in _cycle(300 - 60 * minute, 100 * minute)]
    write("consumer_queue", [row for row in cycles if not (row["ts"] == at(0) and row["group"] == "stuck")])
    rules, root = _rules(tmp_path), tmp_path / "store"
    assert "row_number()" in _physical(spark, root, rules)
    found = _found(spark, root, rules, prune_min_rows=0)
    assert found == _found(spark, root, rules, prune_min_rows=None)
    assert ("Lagging", "stuck", 4990.0, False) in [(rule, dict(labels)["group"], value, no_data)
                                                   for rule, labels, _, value, no_data in found]
