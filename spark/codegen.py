"""The session settings a cycle judged from kept state runs under.

- Interpreted operators (no whole-stage codegen): plans over kept state are small, and whole-stage
  code ran slower than generated expressions even once its classes were reused across cycles
  (160k queue series: 5.09 s against 3.76 s per cycle, the two alternating on one store).
- A small steady cycle's expressions are interpreted too (projections, predicates, orderings:
  `codegen.factoryMode`): generating their code costs a fixed share of every cycle even when the
  classes come from Spark's cache, and at 16 series that is more than interpreting a few hundred
  rows. The interpreter's cost grows with the rows instead, so cycles that bring many rows, and
  every rebuild, generate (spark/sizing.py GENERATED_MIN_ROWS).
- Generated code holds `now` by reference, not as a literal in its source (GENERATED): NOW is
  written as a decimal constant (spark/sql.py), which Spark's code generator passes to the class
  it compiles through its references array, and constant folding, which would turn it back into
  a timestamp literal inlined into the source, is off. So a steady cycle's source is the same as
  the cycle before's, and Spark's code cache returns the classes compiled then: with `now` a
  literal every generated cycle compiled its classes anew (58 for the built-in pack; Janino, then
  the JIT), ~0.5 s at 16 series. tests/spark/test_compiled_code.py checks that steady cycles
  compile nothing.
- No broadcast joins: each broadcast is a Spark job of its own, and every kept frame is one
  partition (a COALESCE hint in every fold), so a sort-merge join of two of them needs no shuffle.
- No constraint propagation: a kept frame is a local checkpoint (a LogicalRDD), which carries the
  constraints of the plan that built it; under a UNION ALL with the new rows Spark 4.3's optimizer
  failed on them (`key not found` in UnionBase.rewriteConstraints: the consumer_group view's newest
  rows, every steady cycle of bench/scale.py), and the filters it infers from them are of no use
  on frames of a few partitions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

CYCLE_SETTINGS = {
    "spark.sql.codegen.wholeStage": "false",
    "spark.sql.autoBroadcastJoinThreshold": "-1",
    "spark.sql.constraintPropagation.enabled": "false",
}
INTERPRETED = {
    "spark.sql.codegen.factoryMode": "NO_CODEGEN",
    # Interpreted projections share common subexpressions through a cache cleared for every row
    # (SubExprEvaluationRuntime, a Guava cache): at 160k queue series ~6% of the executors' time in
    # a JFR profile, and the steady cycle's executor CPU fell from 8.2 s to 7.6 s without it.
    "spark.sql.subexpressionElimination.enabled": "false",
}
GENERATED = {
    # Folded, `timestamp_micros(CAST(<now> AS BIGINT))` becomes a timestamp literal, which the
    # generator writes into the source (`1764180000000000L`); unfolded, the decimal constant is
    # a reference object and the source does not change with `now`.
    "spark.sql.optimizer.excludedRules": "org.apache.spark.sql.catalyst.optimizer.ConstantFolding",
}


@contextmanager
def cycle_settings(spark: SparkSession, partitions: int = 1, interpreted: bool = True) -> Iterator[None]:
    """CYCLE_SETTINGS, and INTERPRETED or GENERATED, for the duration of the block, and
    `partitions` shuffle partitions when a fold is spread over more than one; the session's own
    settings are restored afterwards."""
    settings = {**CYCLE_SETTINGS, **(INTERPRETED if interpreted else GENERATED)}
    if partitions > 1:
        settings["spark.sql.shuffle.partitions"] = str(partitions)
    before = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, value)
