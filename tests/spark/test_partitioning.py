"""How the evaluator lays out a table's window: one partition without shuffles when it is small, and
operators interpreted rather than compiled."""

from pathlib import Path

from rules.loader import load_rule_files
from spark.codegen import WHOLE_STAGE
from spark.evaluate import Evaluator
from tests.spark.kind_samples import NOW, STALE, at, cq_row, rule_yaml

RULES = (
    {"alert": "Lagging", "kind": "threshold", "table": "consumer_queue", "value": "lag", "above": {"warning": 100}},
    {"alert": "GroupLagging", "kind": "threshold", "table": "consumer_queue", "value": "lag", "by": ["cluster", "group"],
     "reduce": "sum", "above": {"warning": 100}},
    {"alert": "Stalled", "kind": "stall", "table": "consumer_queue", "value": "consumer_offset", "while": "lag > 0",
     "over": "2m"},
)


def _store_and_rules(write, tmp_path: Path):
    rows = []
    for minute in range(6):
        rows += [cq_row(at(60 * minute), "stuck", 0, broker_offset=5000 - minute, consumer_offset=10),
                 cq_row(at(60 * minute), "fine", 1, broker_offset=5000 - minute, consumer_offset=5000 - minute)]
    write("consumer_queue", rows)
    path = tmp_path / "rules.yaml"
    path.write_text(rule_yaml(*RULES))
    return load_rule_files([path]).rules


def _physical(spark, root: Path, rules, **options) -> str:
    plan = Evaluator(spark, root, **options).plan(rules, NOW, STALE)
    return plan._jdf.queryExecution().executedPlan().toString()


def test_a_small_window_is_evaluated_without_a_shuffle(spark, write, tmp_path):
    rules = _store_and_rules(write, tmp_path)
    small = _physical(spark, tmp_path / "store", rules)
    big = _physical(spark, tmp_path / "store", rules, one_partition_max_rows=0)
    # Grouping by series, reducing by group and the stall's window functions each need rows of a
    # key together: across partitions that is an Exchange (a shuffle stage); in one partition, none.
    assert "Exchange hashpartitioning" not in small
    assert "Exchange hashpartitioning" in big


def test_one_partition_and_many_find_the_same(spark, write, tmp_path):
    rules = _store_and_rules(write, tmp_path)
    root = tmp_path / "store"

    def found(**options):
        return sorted((f.rule, sorted(f.labels.items()), f.severity, f.value)
                      for f in Evaluator(spark, root, **options).evaluate(rules, NOW, STALE))

    small = found()
    assert small == found(one_partition_max_rows=0)
    assert {rule for rule, *_ in small} == {"Lagging", "GroupLagging", "Stalled"}


def test_the_newest_samples_of_a_big_window_are_read_as_one_partition(spark, write, tmp_path):
    # Twelve rows in the window, two at the newest time: a window over the limit whose newest
    # cycle is under it (160k queue series: 3-5M rows a window, 160k a cycle).
    rules = [r for r in _store_and_rules(write, tmp_path) if r.alert in ("Lagging", "GroupLagging")]
    root = tmp_path / "store"
    options = {"prune_min_rows": 0, "one_partition_max_rows": 5}
    assert "Exchange hashpartitioning" not in _physical(spark, root, rules, **options)
    assert "Exchange hashpartitioning" in _physical(spark, root, rules, prune_min_rows=0, one_partition_max_rows=1)

    def found(**options):
        return sorted((f.rule, sorted(f.labels.items()), f.severity, f.value)
                      for f in Evaluator(spark, root, **options).evaluate(rules, NOW, STALE))

    lagging = found(**options)
    assert lagging == found(prune_min_rows=0, one_partition_max_rows=0)
    assert [(rule, dict(labels)["group"]) for rule, labels, *_ in lagging] == [("GroupLagging", "stuck"),
                                                                              ("Lagging", "stuck")]


class _NotingCodegen(Evaluator):
    """An evaluator that notes the session's whole-stage codegen setting each time it plans."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.compiled: list[str] = []

    def plan(self, *args, **kwargs):
        self.compiled.append(self.spark.conf.get(WHOLE_STAGE))
        return super().plan(*args, **kwargs)


def test_small_windows_are_interpreted_big_ones_compiled_and_the_session_setting_is_kept(spark, write, tmp_path):
    rules = _store_and_rules(write, tmp_path)
    root = tmp_path / "store"
    small, big = _NotingCodegen(spark, root), _NotingCodegen(spark, root, whole_stage_min_rows=12)
    found = {}
    try:
        for evaluator, session_setting in ((small, "true"), (big, "false")):
            spark.conf.set(WHOLE_STAGE, session_setting)
            found[evaluator] = sorted((f.rule, sorted(f.labels.items()), f.severity, f.value)
                                      for f in evaluator.evaluate(rules, NOW, STALE))
            assert spark.conf.get(WHOLE_STAGE) == session_setting
    finally:
        spark.conf.unset(WHOLE_STAGE)
    # Twelve rows in the consumer_queue window: under the default threshold, at big's.
    assert small.compiled == ["false"] and big.compiled == ["true"]
    assert found[small] == found[big]
    assert {rule for rule, *_ in found[small]} == {"Lagging", "GroupLagging", "Stalled"}
