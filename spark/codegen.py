"""The session settings a cycle judged from kept state runs under.

- Interpreted operators (no whole-stage codegen): every cycle's plans hold that cycle's `now` as
  literals, and Spark writes them into the generated source, so each cycle's code would be new:
  Janino compiles it again and the JIT compiles the new classes again, on the same two cores as
  the evaluation. Plans over kept state are small; compiling them saves less than it costs.
- A small steady cycle's expressions are interpreted too (projections, predicates, orderings:
  `codegen.factoryMode`), for the same reason: generated, every steady cycle compiles its classes
  anew, a fixed cost of ~0.5 s at 16 series (1.83 s against 1.33 s per cycle). The
  interpreter's cost grows with the rows instead: from ~16k queue series on, generated code is as
  fast, and at 160k it is much faster (4.24 s against 6.56 s, frames serialized), so cycles that
  bring many rows, and every rebuild, generate (spark/evaluate.py GENERATED_MIN_ROWS). The engine
  before SQL-text plans measured interpreted faster at 16k (JVM CPU 3.7-4.0 s against 5.3-5.6 s).
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


@contextmanager
def cycle_settings(spark: SparkSession, partitions: int = 1, interpreted: bool = True) -> Iterator[None]:
    """CYCLE_SETTINGS (and INTERPRETED for a steady cycle) for the duration of the block, and
    `partitions` shuffle partitions when a fold is spread over more than one; the session's own
    settings are restored afterwards."""
    settings = {**CYCLE_SETTINGS, **(INTERPRETED if interpreted else {})}
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
