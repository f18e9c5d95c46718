"""Each series' newest row, kept between cycles (spark/frames.py), judges as the window does."""

from pathlib import Path

from rules.loader import load_rule_files
from spark.evaluate import Evaluator
from spark.frames import plan_frames
from spark.reference import evaluate_reference
from tests.spark.kind_samples import NOW, STALE, at, comparable, cq_row, rule_yaml

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


def test_a_row_written_twice_is_still_one_finding(spark, write, tmp_path):
    # The newest cycle holds the stuck queue's row twice (a cycle written again after a crash).
    cycles = [row for minute in range(6) for row in _cycle(300 - 60 * minute, 100 * minute)]
    write("consumer_queue", [*cycles, cq_row(at(0), "stuck", 0, broker_offset=5000, consumer_offset=10)])
    rules, root = _rules(tmp_path), tmp_path / "store"
    evaluator = Evaluator(spark, root)
    found = comparable(evaluator.evaluate(rules, NOW, STALE))
    assert found == comparable(evaluate_reference(spark, root, rules, NOW, STALE))
    assert [rule for rule, *_ in found] == ["GroupLagging", "Lagging", "Stalled"]
    (frame,) = [f for f in plan_frames(rules, STALE).values() if f.source == "consumer_queue"]
    assert evaluator.state.frames.frames[frame.signature].count() == 2  # one row per series


def test_a_series_gone_quiet_keeps_its_older_row(spark, write, tmp_path):
    # The stuck queue missed the last cycle: it is judged on its row of a minute ago.
    cycles = [row for minute in range(6) for row in _cycle(300 - 60 * minute, 100 * minute)]
    write("consumer_queue", [row for row in cycles if not (row["ts"] == at(0) and row["group"] == "stuck")])
    rules, root = _rules(tmp_path), tmp_path / "store"
    found = comparable(Evaluator(spark, root).evaluate(rules, NOW, STALE))
    assert found == comparable(evaluate_reference(spark, root, rules, NOW, STALE))
    assert ("Lagging", "stuck", 4990.0, False) in [(rule, dict(labels)["group"], value, no_data)
                                                   for rule, labels, _, value, _, no_data, _ in found]


def _sql_executions_started(spark) -> int:
    """How many SQL executions this JVM has started (Spark's own counter of execution ids)."""
    jvm = spark.sparkContext._jvm  # noqa: SLF001
    executions = jvm.java.lang.Class.forName("org.apache.spark.sql.execution.SQLExecution$")
    counter = executions.getDeclaredField("_nextExecutionId")
    counter.setAccessible(True)
    return int(counter.get(executions.getDeclaredField("MODULE$").get(None)))


def test_a_kept_frame_is_checkpointed_without_a_sql_execution_of_its_own(spark):
    # A lazy checkpoint computes nothing: the one SQL execution is the collect that computes it
    # (localCheckpoint would start one more per frame, 8 per steady cycle, spark/state.py).
    from spark.state import checkpoint, is_checkpointed

    frame = spark.range(6).selectExpr("id", "id * 2 AS twice").where("id % 2 = 0")
    before = _sql_executions_started(spark)
    kept = checkpoint(frame)
    assert not is_checkpointed(kept)
    assert sorted(tuple(row) for row in kept.collect()) == [(0, 0), (2, 4), (4, 8)]
    assert is_checkpointed(kept)
    assert _sql_executions_started(spark) - before == 1
