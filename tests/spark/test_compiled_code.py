"""A big cluster's steady cycles run generated code; the classes compiled for one cycle serve the
next, because `now` reaches them as data, not written into their source (spark/sizing.py)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.store_gen import STEP, write_cycle, write_store
from rules.loader import BUILTIN_DIR, load_rule_files
from spark.evaluate import Evaluator
from spark.reference import evaluate_reference
from spark.sizing import Sizing

SERIES = 16
STALE = timedelta(minutes=1)
START = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
# Every steady cycle generates code, as those of clusters of 10k queue series and more do.
GENERATING = Sizing(generated_min_rows=0)


def compilations(spark: Any) -> int:
    """How many classes Spark's code generator has compiled in this JVM so far."""
    metrics = spark.sparkContext._jvm.org.apache.spark.metrics.source.CodegenMetrics  # noqa: SLF001
    return int(metrics.METRIC_COMPILATION_TIME().getCount())


def test_generated_steady_cycles_reuse_the_code_compiled_before(spark: Any, tmp_path: Path) -> None:
    root = tmp_path / "store"
    write_store(root, SERIES, 4, START)
    rules = list(load_rule_files([BUILTIN_DIR]).rules)
    evaluator = Evaluator(spark, root, GENERATING)
    before = compilations(spark)
    evaluator.evaluate(rules, START + timedelta(seconds=1), STALE)
    rebuilt = compilations(spark) - before
    compiled: list[int] = []
    for step in range(4, 9):
        ts = START + STEP * (step - 3)
        write_cycle(root, SERIES, step, ts)
        before = compilations(spark)
        evaluator.evaluate(rules, ts + timedelta(seconds=1), STALE)
        compiled.append(compilations(spark) - before)
        assert evaluator.last_cycle == "folded 1 cycle(s), generated code"
    # The first steady cycles compile what the rebuild's plans did not need (if anything); from
    # then on every cycle's source is the one before's, whatever its `now`.
    assert rebuilt + compiled[0] > 0, "the first generated cycles compiled nothing: is it generating code at all?"
    assert compiled[-3:] == [0, 0, 0], f"classes compiled per steady cycle: {compiled}"
    # The code reused still reads each cycle's own `now`: with no collection after the last cycle,
    # the series age until they are stale (no_data), as the reference path finds them. The first
    # cycle with nothing new to fold runs a plan of its own (no new rows to union), compiled once.
    ageing: list[int] = []
    for minutes in (1, 2, 3):
        now = ts + timedelta(minutes=minutes, seconds=1)
        before = compilations(spark)
        findings = evaluator.evaluate(rules, now, STALE)
        ageing.append(compilations(spark) - before)
        assert findings == evaluate_reference(spark, root, rules, now, STALE), f"at {now:%H:%M:%S}"
    assert ageing[1:] == [0, 0], f"classes compiled per ageing cycle: {ageing}"
    assert any(f.no_data for f in findings), "no series was reported stale three minutes after its last sample"
